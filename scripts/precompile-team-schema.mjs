#!/usr/bin/env node
/**
 * Part of `npm run build`, after tsc: writes the team schema's validator as
 * code (ajv standalone) to dist/config/team-validator.cjs, so that loading a
 * team file compiles nothing (src/config/schema.ts uses it when it was made
 * from the same schema text, and compiles the schema itself otherwise).
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PRECOMPILED_VALIDATOR_URL, teamValidatorSource } from "../dist/config/schema.js";

writeFileSync(fileURLToPath(PRECOMPILED_VALIDATOR_URL), teamValidatorSource());
