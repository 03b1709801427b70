#!/usr/bin/env node
/**
 * Part of `npm run build`, after tsc: writes the default prompt templates
 * (prompts/*.hbs) compiled by Handlebars to dist/prompts/templates.cjs, so
 * that a run with a default prompt compiles nothing and loads only the
 * Handlebars runtime (each is used only when made from its file's very text
 * and the same options: src/prompts/precompiled.ts).
 */
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { DEFAULT_PROMPTS_DIR } from "../dist/prompts/render.js";
import { PRECOMPILED_TEMPLATES_URL, precompiledTemplatesSource } from "../dist/prompts/precompiled.js";

const handlebars = createRequire(import.meta.url)("handlebars/dist/handlebars.min.js");
writeFileSync(fileURLToPath(PRECOMPILED_TEMPLATES_URL), precompiledTemplatesSource(DEFAULT_PROMPTS_DIR, handlebars));
