/**
 * `schemas/agent-test.schema.json` (JSON Schema 2020-12), compiled strict on
 * first use, and its errors as located problems that say what is expected.
 */
import { readFileSync } from "node:fs";
import type { ErrorObject } from "ajv";
import type { ValidateFunction } from "ajv/dist/2020.js";
import { describe } from "../config/validate.js";
import { pointerSegment, type SourceMap } from "../config/source.js";
import type { ConfigProblem } from "../errors.js";
import { lazily } from "../lazy.js";

/** Path of `schemas/agent-test.schema.json` inside the package (same from src/ and dist/). */
export const AGENT_TEST_SCHEMA_URL = new URL("../../schemas/agent-test.schema.json", import.meta.url);

const ajv2020 = lazily<typeof import("ajv/dist/2020.js")>("ajv/dist/2020.js");
let validator: ValidateFunction | undefined;

/** The schema as parsed JSON. */
export function agentTestSchema(): Record<string, unknown> {
  return JSON.parse(readFileSync(AGENT_TEST_SCHEMA_URL, "utf8")) as Record<string, unknown>;
}

function agentTestValidator(): ValidateFunction {
  validator ??= new (ajv2020().Ajv2020)({ strict: true, allErrors: true, allowUnionTypes: true, verbose: true }).compile(agentTestSchema());
  return validator;
}

/** Every problem of `value` against the schema, located in `source`; none when it is valid. */
export function schemaProblems(value: unknown, source: SourceMap): ConfigProblem[] {
  const validate = agentTestValidator();
  if (validate(value)) return [];
  const seen = new Set<string>();
  const problems: ConfigProblem[] = [];
  for (const error of (validate.errors ?? []).slice(0, 200)) {
    const problem = toProblem(error, source);
    if (!problem) continue;
    const id = `${problem.path}\u0000${problem.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    problems.push(problem);
  }
  if (problems.length === 0) problems.push(source.problem("", "does not match the agent test schema"));
  return problems;
}

function toProblem(error: ErrorObject, source: SourceMap): ConfigProblem | undefined {
  const params = error.params as Record<string, unknown>;
  const here = error.instancePath;
  // if/then/else failures repeat what the branch's own errors say.
  if (error.keyword === "if") return undefined;
  switch (error.keyword) {
    case "additionalProperties": {
      const key = String(params.additionalProperty);
      const allowed = Object.keys(((error.parentSchema as Record<string, unknown> | undefined)?.properties ?? {}) as object);
      const hint = allowed.length > 0 ? `; expected one of ${allowed.join(", ")}` : "";
      return source.problem(`${here}/${pointerSegment(key)}`, `unknown key '${key}'${hint}`, "key");
    }
    case "required":
      return source.problem(here, `missing required key '${String(params.missingProperty)}'`);
    case "oneOf": {
      const keys = ((error.parentSchema as { oneOf?: Array<{ required?: string[] }> } | undefined)?.oneOf ?? []).flatMap((b) => b.required ?? []);
      return source.problem(here, `expected exactly one of the keys ${keys.join(", ")}`);
    }
    case "type":
      return source.problem(here, `expected ${String(params.type).split(",").map(typeName).join(" or ")}, got ${describe(error.data)}`);
    case "enum":
      return source.problem(here, `expected one of ${(params.allowedValues as unknown[]).map(String).join(", ")}, got ${describe(error.data)}`);
    case "const":
      return source.problem(here, `expected ${JSON.stringify(params.allowedValue)}, got ${describe(error.data)}`);
    case "minLength":
      return source.problem(here, "must not be empty");
    case "minItems":
      return source.problem(here, `expected a list of at least ${String(params.limit)} item${params.limit === 1 ? "" : "s"}`);
    case "minProperties":
      return source.problem(here, "expected at least one key");
    case "maxProperties":
      return source.problem(here, `expected exactly one of the keys equals, contains, matches`);
    case "minimum":
      return source.problem(here, `expected a number >= ${String(params.limit)}, got ${describe(error.data)}`);
    default:
      return source.problem(here, error.message ?? `fails the ${error.keyword} rule`);
  }
}

function typeName(type: string): string {
  const names: Record<string, string> = {
    object: "a mapping",
    array: "a list",
    string: "a string",
    integer: "an integer",
    number: "a number",
    boolean: "true or false",
    null: "nothing",
  };
  return names[type] ?? type;
}
