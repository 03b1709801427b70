/**
 * The one humaniser of ajv's errors, for every YAML file the runtime reads
 * (`yaml-file.ts`): each error becomes a problem located at its line and
 * column, whose message says what is expected. A file kind adds its own
 * words through `SchemaWords` (the team file: agent kinds, names, the
 * schema's descriptions).
 */
import type { ErrorObject, ValidateFunction } from "ajv";
import type { ConfigProblem } from "../errors.js";
import type { RawTeam } from "./raw-team.js";
import { agentKindsWithKey, allowedKeys, describeKey, teamValidator } from "./schema.js";
import type { SourceMap } from "./source.js";
import { pointerSegment } from "./source.js";
import { didYouMean, listNames } from "./suggest.js";

/** What a file kind says in its own words. */
export interface SchemaWords {
  /** The schema, as the message of an invalid file that no error explains says it: "the team schema". */
  name: string;
  /** The keys a mapping may have. @default the keys of its schema's `properties` */
  allowedKeys?: (schema: Record<string, unknown> | undefined) => string[];
  /** The description of a required key, said with its absence. @default none */
  describeKey?: (schema: Record<string, unknown> | undefined, key: string) => string | undefined;
  /** A problem of its own for an error, or null to drop it; undefined: the common words. */
  special?: (error: ErrorObject, source: SourceMap) => ConfigProblem | null | undefined;
}

/**
 * Every problem of `value` against `validate`, located in `source`; none
 * when it is valid (ajv fills defaults into `value`: pass a copy you own).
 */
export function schemaProblems(validate: ValidateFunction, value: unknown, source: SourceMap, words: SchemaWords): ConfigProblem[] {
  if (validate(value)) return [];
  const problems: ConfigProblem[] = [];
  const seen = new Set<string>();
  // A hostile file can produce an error per key; past a point more add nothing.
  const errors = (validate.errors ?? []).slice(0, MAX_ERRORS);
  // A bad key name is reported once, by its propertyNames error; the errors
  // of the name's own schema (pattern, ...) would repeat it at the mapping.
  const badNames = new Set(
    errors.filter((e) => e.keyword === "propertyNames").map((e) => `${e.instancePath}\u0000${String((e.params as Params).propertyName)}`),
  );
  for (const error of errors) {
    if (error.keyword !== "propertyNames" && badNames.has(`${error.instancePath}\u0000${String(error.data)}`)) continue;
    const special = words.special?.(error, source);
    const problem = special === undefined ? toProblem(error, source, words) : special;
    if (!problem) continue;
    const id = `${problem.path}\u0000${problem.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    problems.push(problem);
  }
  // Every error above may be one a clearer one speaks for; an invalid file must still say so.
  if (problems.length === 0) problems.push(source.problem("", `does not match ${words.name}`));
  return problems;
}

/**
 * Validate `value` against the team schema, filling defaults into it (pass a
 * copy you own). Returns the value typed when it is valid, else every problem found.
 */
export function validateAgainstSchema(value: unknown, source: SourceMap): { team: RawTeam | undefined; problems: ConfigProblem[] } {
  const problems = schemaProblems(teamValidator(), value, source, TEAM_WORDS);
  return { team: problems.length === 0 ? (value as RawTeam) : undefined, problems };
}

const TEAM_WORDS: SchemaWords = {
  name: "the team schema",
  allowedKeys,
  describeKey,
  special(error, source) {
    const params = error.params as Params;
    const here = error.instancePath;
    // Inlined name schemas tag their errors with the property name; the propertyNames error speaks for them.
    if ((error as ErrorObject & { propertyName?: string }).propertyName !== undefined) return null;
    if (error.keyword === "propertyNames") {
      const name = String(params.propertyName);
      return source.problem(`${here}/${pointerSegment(name)}`, `invalid name '${name}': ${NAME_RULE}`, "key");
    }
    if (error.keyword === "pattern" && (error.parentSchema as Params | undefined)?.pattern === NAME_PATTERN) {
      return source.problem(here, `invalid name ${describe(error.data)}: ${NAME_RULE}`);
    }
    if (error.keyword === "additionalProperties" || error.keyword === "unevaluatedProperties") {
      const key = String(params.additionalProperty ?? params.unevaluatedProperty);
      const kind = isRecord(error.data) && /^\/agents\/[^/]+$/.test(here) ? error.data.kind : undefined;
      const owners = typeof kind === "string" ? agentKindsWithKey(key) : [];
      const message = `unknown key '${key}' for a ${String(kind)} agent: '${key}' belongs to ${owners.join(" and ")} agents`;
      if (owners.length > 0) return source.problem(`${here}/${pointerSegment(key)}`, message, "key");
    }
    return undefined;
  },
};

const MAX_ERRORS = 1000;

type Params = Record<string, unknown>;

function toProblem(error: ErrorObject, source: SourceMap, words: SchemaWords): ConfigProblem | undefined {
  const params = error.params as Params;
  const here = error.instancePath;
  const parent = error.parentSchema as Record<string, unknown> | undefined;
  // "must match then schema" repeats what the branch's own errors say; the
  // branches of an anyOf or oneOf of keys are summarised by its own error.
  if (error.keyword === "if") return undefined;
  if (/\/(anyOf\/|oneOf\/\d+\/required$)/.test(error.schemaPath)) return undefined;

  switch (error.keyword) {
    case "additionalProperties":
    case "unevaluatedProperties": {
      const key = String(params.additionalProperty ?? params.unevaluatedProperty);
      const allowed = words.allowedKeys?.(parent) ?? Object.keys(isRecord(parent?.properties) ? parent.properties : {});
      const hint = didYouMean(key, allowed) || (allowed.length > 0 ? `; expected one of ${listNames(allowed)}` : "");
      return source.problem(`${here}/${pointerSegment(key)}`, `unknown key '${key}'${hint}`, "key");
    }
    case "required": {
      const key = String(params.missingProperty);
      const about = words.describeKey?.(parent, key);
      return source.problem(here, `missing required key '${key}'${about ? ` (${lowerFirst(about)})` : ""}`);
    }
    case "anyOf":
    case "oneOf": {
      const branches = (parent?.[error.keyword] ?? []) as Array<{ required?: string[] }>;
      const options = branches.flatMap((b) => b.required ?? []);
      if (options.length === 0) return source.problem(here, error.message ?? `fails the ${error.keyword} rule`);
      const keys = isRecord(error.data) ? Object.keys(error.data) : [];
      const stray = keys.map((k) => didYouMean(k, options)).find((s) => s !== "");
      return source.problem(here, `expected exactly one of the keys ${listNames(options)}${stray ?? ""}`);
    }
    case "type":
      return source.problem(here, `expected ${typeName(String(params.type))}, got ${describe(error.data)}`);
    case "enum": {
      const allowed = (params.allowedValues as unknown[]).map(String);
      const got = describe(error.data);
      const hint = typeof error.data === "string" ? didYouMean(error.data, allowed) : "";
      return source.problem(here, `expected one of ${listNames(allowed)}, got ${got}${hint}`);
    }
    case "const":
      return source.problem(here, `expected ${JSON.stringify(params.allowedValue)}, got ${describe(error.data)}`);
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
      return source.problem(here, `expected a number ${String(params.comparison)} ${String(params.limit)}, got ${describe(error.data)}`);
    case "minLength":
      return source.problem(here, params.limit === 1 ? "must not be empty" : `expected at least ${String(params.limit)} characters`);
    case "minItems":
      return source.problem(here, `expected a list of at least ${String(params.limit)} item${params.limit === 1 ? "" : "s"}`);
    case "minProperties":
      return source.problem(here, `expected at least ${String(params.limit)} entr${params.limit === 1 ? "y" : "ies"}`);
    case "uniqueItems": {
      const later = Math.max(Number(params.i), Number(params.j));
      return source.problem(`${here}/${later}`, `${describe(listItem(error.data, later))} is listed twice`);
    }
    case "pattern": {
      if (params.pattern === "^https?://") return source.problem(here, `expected an http:// or https:// URL, got ${describe(error.data)}`);
      return source.problem(here, `expected text matching ${String(params.pattern)}, got ${describe(error.data)}`);
    }
    default:
      return source.problem(here, error.message ?? `fails the ${error.keyword} rule`);
  }
}

const NAME_PATTERN = "^[A-Za-z_][A-Za-z0-9_-]{0,63}$";
const NAME_RULE = "use letters, digits, '_' and '-', starting with a letter or '_', at most 64 characters";

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
  return type
    .split(",")
    .map((t) => names[t] ?? t)
    .join(" or ");
}

/** A value as a message shows it: `'text'`, `3.5`, `a mapping`. */
export function describe(value: unknown): string {
  if (value === null || value === undefined) return "nothing";
  if (typeof value === "string") return `'${value.length > 40 ? `${value.slice(0, 40)}…` : value}'`;
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  return String(value);
}

function listItem(list: unknown, index: number): unknown {
  return Array.isArray(list) ? list[index] : undefined;
}

function lowerFirst(text: string): string {
  const trimmed = text.replace(/\.$/, "");
  return trimmed.charAt(0).toLowerCase() + trimmed.slice(1);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
