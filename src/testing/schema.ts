/**
 * `schemas/agent-test.schema.json` (JSON Schema 2020-12), compiled strict on
 * first use; its errors are said by the one humaniser (`config/validate.ts`).
 */
import { readFileSync } from "node:fs";
import type { ValidateFunction } from "ajv/dist/2020.js";
import { SCHEMA_OPTIONS } from "../config/precompiled.js";
import type { SchemaWords } from "../config/validate.js";
import { lazily } from "../lazy.js";

/** Path of `schemas/agent-test.schema.json` inside the package (same from src/ and dist/). */
export const AGENT_TEST_SCHEMA_URL = new URL("../../schemas/agent-test.schema.json", import.meta.url);

const ajv2020 = lazily<typeof import("ajv/dist/2020.js")>("ajv/dist/2020.js");
let validator: ValidateFunction | undefined;

/** The schema as parsed JSON. */
export function agentTestSchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(AGENT_TEST_SCHEMA_URL, "utf8")) as Record<string, unknown>;
}

/** The compiled validator, on first use. */
export function agentTestValidator(): ValidateFunction {
  validator ??= new (ajv2020().Ajv2020)(SCHEMA_OPTIONS).compile(agentTestSchema());
  return validator;
}

/** The test file's own words: a matcher takes one key. */
export const AGENT_TEST_WORDS: SchemaWords = {
  name: "the agent test schema",
  special: (error, source) =>
    error.keyword === "maxProperties" ? source.problem(error.instancePath, "expected exactly one of the keys 'equals', 'contains' or 'matches'") : undefined,
};
