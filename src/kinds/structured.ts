/**
 * Structured output for the flows (the PlanAndSolve flow design's PydanticOutputParser): format
 * instructions generated from a JSON Schema, the tolerant JSON parser of
 * `parse/json.ts`, and ajv validation with readable errors that can go back to
 * the model for repair.
 */
import { readFileSync } from "node:fs";
import type { Ajv2020, ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import { lazily } from "../lazy.js";
import { describeError, INTERRUPTED, prefixed, type RunError } from "../errors.js";
import type { JsonSchema } from "../config/types.js";
import { addUsage } from "../events/usage.js";
import type { Usage } from "../events/types.js";
import { parseJsonTolerant } from "../parse/json.js";
import type { AgentContext } from "./types.js";

/** The planner's answer: the steps to follow, in order. */
export interface Plan {
  steps: string[];
}

/** The replanner's answer: a final response to the user, or the steps still to do. */
export interface Action {
  action: { response: string } | { steps: string[] };
}

/** A parsed and validated value, or a readable reason it was not usable. */
export type Structured<T> = { ok: true; value: T } | { ok: false; errors: string };

/** Directory of the JSON Schemas shipped with the package. */
const SCHEMAS_DIR = new URL("../../schemas/", import.meta.url);

const schemaCache = new Map<string, JsonSchema>();

/** A schema of `schemas/`, by file stem (`plan`, `action`); read once. */
export function loadSchema(name: "plan" | "action"): JsonSchema {
  let schema = schemaCache.get(name);
  if (!schema) {
    schema = JSON.parse(readFileSync(new URL(`${name}.schema.json`, SCHEMAS_DIR), "utf8")) as JsonSchema;
    schemaCache.set(name, schema);
  }
  return schema;
}

// One ajv instance and one compiled validator per schema object: compiling is
// the expensive part, and every flow step validates against the same two schemas.
let ajv: Ajv2020 | undefined;
const ajv2020 = lazily<typeof import("ajv/dist/2020.js")>("ajv/dist/2020.js");
const validators = new WeakMap<JsonSchema, ValidateFunction>();

function validatorFor(schema: JsonSchema): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) {
    ajv ??= new (ajv2020().Ajv2020)({ strict: true, allErrors: true, verbose: true, $data: false, validateFormats: false });
    const { $id: _id, ...anonymous } = schema;
    validate = ajv.compile(anonymous);
    validators.set(schema, validate);
  }
  return validate;
}

/**
 * Text telling the model to answer with one JSON object matching `schema`,
 * generated from the schema itself (title, description and the schema).
 */
export function formatInstructions(schema: JsonSchema): string {
  const { $schema: _s, $id: _i, ...shown } = schema;
  const title = typeof schema.title === "string" ? schema.title : "object";
  const about = typeof schema.description === "string" ? ` (${schema.description})` : "";
  return [
    `Answer with a single JSON object, a ${title}${about}, that conforms to this JSON Schema:`,
    "```json",
    JSON.stringify(shown, null, 2),
    "```",
    "Output only a valid JSON instance of the schema, not the schema itself, with no other text.",
  ].join("\n");
}

/** `query` followed by the format instructions of `schema`, as the PlanAndSolve flow design's `parser.format(query)`. */
export function withFormatInstructions(query: string, schema: JsonSchema): string {
  return `${query}\n\n${formatInstructions(schema)}`;
}

/**
 * Parse a model's answer against `schema`. Tolerates a fenced ```json block
 * and text around the JSON; the first candidate that validates wins, else the
 * errors of the first candidate that parsed are reported.
 */
export function parseStructured<T>(text: string, schema: JsonSchema): Structured<T> {
  const validate = validatorFor(schema);
  let firstErrors: string | undefined;
  const parsed = parseJsonTolerant(text, {
    accept: (value) => {
      if (validate(value)) return true;
      // ajv overwrites `validate.errors` on every call: keep the first candidate's now.
      firstErrors ??= formatErrors(validate.errors ?? []);
      return false;
    },
  });
  if (parsed.ok) return { ok: true, value: parsed.value as T };
  if (firstErrors !== undefined) return { ok: false, errors: `the JSON does not match the schema: ${firstErrors}` };
  return { ok: false, errors: text.trim() === "" ? "the answer is empty" : "no JSON object found in the answer" };
}

/** ajv errors as one readable line: `/steps must NOT have fewer than 1 items; ...`. */
export function formatErrors(errors: ErrorObject[]): string {
  const lines = errors.map((e) => {
    const where = e.instancePath || "/";
    if (e.keyword === "oneOf") return `${where} must be exactly one of ${branchNames(e.parentSchema)}`;
    const extra = e.keyword === "additionalProperties" ? ` ('${String((e.params as { additionalProperty?: string }).additionalProperty)}')` : "";
    return `${where} ${e.message ?? "is invalid"}${extra}`;
  });
  return [...new Set(lines)].join("; ");
}

/** `oneOf: [{$ref: "#/$defs/Response"}, {$ref: "#/$defs/Plan"}]` → `Response or Plan`. */
function branchNames(parentSchema: unknown): string {
  const branches = (parentSchema as { oneOf?: unknown[] } | undefined)?.oneOf ?? [];
  const names = branches.map((b, i) => {
    const branch = b as { $ref?: string; title?: string };
    return branch.title ?? branch.$ref?.split("/").pop() ?? `option ${i + 1}`;
  });
  return names.length ? names.join(" or ") : "the allowed shapes";
}

/** A structured answer obtained from an agent, with the usage it cost. */
export type Asked<T> = { ok: true; value: T; usage: Usage } | { ok: false; error: RunError; usage: Usage };

/**
 * A reply read by the team's own `read` function (a flow's `parser:`,
 * docs/flows.md#parser), then validated against `schema` like any parsed reply.
 */
async function readStructured<T>(text: string, schema: JsonSchema, read: (text: string) => unknown): Promise<Structured<T>> {
  let value: unknown;
  try {
    value = await read(text);
  } catch (err) {
    return { ok: false, errors: `the parser could not read it: ${describeError(err)}` };
  }
  const validate = validatorFor(schema);
  return validate(value)
    ? { ok: true, value: value as T }
    : { ok: false, errors: `the parser's result does not match the schema: ${formatErrors(validate.errors ?? [])}` };
}

/**
 * Ask agent `agent` for an answer matching `schema`: the query plus the
 * schema's format instructions; an answer that does not parse or validate
 * goes back ONCE with the errors for repair. `role` names the agent in errors.
 * With `read` (a flow's `parser:`), the query goes as it is, the agent
 * answers in its own format, and `read` turns the answer into the value.
 */
export async function askStructured<T>(
  ctx: AgentContext,
  role: string,
  agent: string,
  query: string,
  schema: JsonSchema,
  read?: (text: string) => unknown,
): Promise<Asked<T>> {
  const title = typeof schema.title === "string" ? schema.title : "answer";
  const ask = (text: string) => (read ? ctx.callAgent(agent, text) : ctx.callAgent(agent, text, { expects: schema }));
  const parse = (text: string) => (read ? readStructured<T>(text, schema, read) : parseStructured<T>(text, schema));
  const first = await ask(read ? query : withFormatInstructions(query, schema));
  let usage = first.usage;
  if (first.result_type === "error") return { ok: false, error: prefixed(`${role} '${agent}' failed: `, first.error), usage };
  const parsed = await parse(first.answer ?? "");
  if (parsed.ok) return { ok: true, value: parsed.value, usage };
  if (ctx.signal.aborted) return { ok: false, error: INTERRUPTED, usage };

  const repair = await ask(repairQuery(query, first.answer ?? "", parsed.errors, read ? undefined : schema));
  usage = addUsage(usage, repair.usage);
  if (repair.result_type === "error") {
    return { ok: false, error: prefixed(`${role} '${agent}' failed while repairing its ${title}: `, repair.error), usage };
  }
  const repaired = await parse(repair.answer ?? "");
  if (repaired.ok) return { ok: true, value: repaired.value, usage };
  return { ok: false, error: { code: "PARSE_FAILED", message: `${role} '${agent}' gave no valid ${title}, even after one repair: ${repaired.errors}` }, usage };
}

/** The repair round-trip: the agent starts afresh, so the query carries everything. */
function repairQuery(query: string, answer: string, errors: string, schema?: JsonSchema): string {
  const lines = [query, "", "Your previous answer was:", answer, "", `It cannot be used: ${errors}.`, "Answer again, correcting these problems."];
  return (schema ? [...lines, "", formatInstructions(schema)] : lines).join("\n");
}
