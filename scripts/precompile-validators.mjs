#!/usr/bin/env node
/**
 * Part of `npm run build`, after tsc: writes the validators of the team
 * schema and of the scripted model's scripts as code (ajv standalone) to
 * dist/config/team-validator.cjs and dist/models/script-validator.cjs, so
 * that loading a team file or a script compiles nothing (each is used only
 * when made from the same schema and options: src/config/precompiled.ts).
 */
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PRECOMPILED_VALIDATOR_URL, teamValidatorSource } from "../dist/config/schema.js";
import { SCRIPT_VALIDATOR_URL, scriptValidatorSource } from "../dist/models/script-format.js";

writeFileSync(fileURLToPath(PRECOMPILED_VALIDATOR_URL), teamValidatorSource());
writeFileSync(fileURLToPath(SCRIPT_VALIDATOR_URL), scriptValidatorSource());
