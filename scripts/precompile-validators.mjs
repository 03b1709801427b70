#!/usr/bin/env node
/**
 * Part of `npm run build`, after tsc: writes the validators of the team
 * schema, of the scripted model's scripts and of the built-in tools'
 * arguments as code (ajv standalone) to dist/config/team-validator.cjs,
 * dist/models/script-validator.cjs and dist/tools/builtin/<tool>-arguments.cjs,
 * so that loading a team file or a script, or checking a built-in tool's
 * arguments, compiles nothing (each is used only when made from the same
 * schema and options: src/config/precompiled.ts).
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PRECOMPILED_VALIDATOR_URL, teamValidatorSource } from "../dist/config/schema.js";
import { SCRIPT_VALIDATOR_URL, scriptValidatorSource } from "../dist/models/script-format.js";
import { builtinArgsValidatorSources } from "../dist/tools/builtin/validators.js";

writeFileSync(fileURLToPath(PRECOMPILED_VALIDATOR_URL), teamValidatorSource());
writeFileSync(fileURLToPath(SCRIPT_VALIDATOR_URL), scriptValidatorSource());
for (const { file, source } of builtinArgsValidatorSources()) writeFileSync(fileURLToPath(file), source);
