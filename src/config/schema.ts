/**
 * The team file's JSON Schema (`schemas/team.schema.json`), read once from the
 * package and compiled once with ajv, or taken precompiled: `npm run build`
 * writes the same validator as code (`dist/config/team-validator.cjs`, by
 * `scripts/precompile-validators.mjs`), so that `validate` and `exec` need
 * neither ajv's compiler nor its ~150 ms (docs/design/engine.md#start-up).
 */
import { readFileSync } from "node:fs";
import type { Options } from "ajv";
import type { ValidateFunction } from "ajv/dist/2020.js";
import { lazily } from "../lazy.js";
import { buildStamp } from "../built.js";
import { loadPrecompiled, precompiledSource, SCHEMA_OPTIONS } from "./precompiled.js";
import type { RawTeam } from "./raw-team.js";

/** Path of `schemas/team.schema.json` inside the package (same from src/ and dist/). */
export const TEAM_SCHEMA_URL = new URL("../../schemas/team.schema.json", import.meta.url);

/** Where `npm run build` writes the precompiled validator (beside this module in dist/). */
export const PRECOMPILED_VALIDATOR_URL = new URL("./team-validator.cjs", import.meta.url);

export type SchemaObject = Record<string, unknown>;

const ajv2020 = lazily<typeof import("ajv/dist/2020.js")>("ajv/dist/2020.js");

let schemaText: string | undefined;
let schema: SchemaObject | undefined;
let validator: ValidateFunction<RawTeam> | undefined;

function readSchemaText(): string {
  schemaText ??= readFileSync(TEAM_SCHEMA_URL, "utf8");
  return schemaText;
}

/** The schema as parsed JSON. */
export function teamSchema(): SchemaObject {
  schema ??= JSON.parse(readSchemaText()) as SchemaObject;
  return schema;
}

/**
 * ajv's options for the team schema: those of every YAML file, defaults filled
 * into the data it checks. The schema itself is checked against the 2020-12
 * meta-schema by a test; skipping that here, and compiling each $ref once,
 * halves compile time; ajv's optimiser passes would cost ~30% more.
 */
const OPTIONS: Options = {
  ...SCHEMA_OPTIONS,
  useDefaults: true,
  validateSchema: false,
  inlineRefs: false,
  code: { optimize: false },
};

/**
 * The compiled validator. A value it accepts is a RawTeam: raw-team.ts is
 * generated from the same schema (a test keeps it so), which is what makes
 * this the one trusted step from `unknown` to typed.
 */
export function teamValidator(): ValidateFunction<RawTeam> {
  validator ??= precompiledValidator() ?? new (ajv2020().Ajv2020)(OPTIONS).compile<RawTeam>(teamSchema());
  return validator;
}

/** The validator `npm run build` wrote, if there is one and it was made from this very schema text and options. */
function precompiledValidator(): ValidateFunction<RawTeam> | undefined {
  return loadPrecompiled<ValidateFunction<RawTeam>>(PRECOMPILED_VALIDATOR_URL, stamp());
}

/** Names the schema's exact text and the options it is compiled with. */
function stamp(): string {
  return buildStamp(readSchemaText(), JSON.stringify(OPTIONS));
}

/**
 * The validator as the source of a CommonJS module (ajv's standalone code,
 * the same options), stamped: what `scripts/precompile-validators.mjs`
 * writes to PRECOMPILED_VALIDATOR_URL.
 */
export function teamValidatorSource(): string {
  const ajv = new (ajv2020().Ajv2020)({ ...OPTIONS, code: { ...OPTIONS.code, source: true } });
  return precompiledSource(ajv, ajv.compile(teamSchema()), stamp(), "schemas/team.schema.json");
}

/**
 * Property names a schema object allows, following `$ref` into `$defs`: the
 * keys to suggest for an unknown key.
 */
export function allowedKeys(node: unknown): string[] {
  const keys = new Set<string>();
  const visit = (s: unknown, depth: number) => {
    if (!isObject(s) || depth > 8) return;
    if (isObject(s.properties)) for (const k of Object.keys(s.properties)) keys.add(k);
    if (typeof s.$ref === "string") visit(resolveRef(s.$ref), depth + 1);
  };
  visit(node, 0);
  return [...keys];
}

/** The agent kinds that have key `key` of their own (not a key every agent has). */
export function agentKindsWithKey(key: string): string[] {
  const defs = teamSchema().$defs as Record<string, { allOf?: unknown[] }> | undefined;
  const base = allowedKeys(resolveRef("#/$defs/agentBase"));
  if (base.includes(key)) return [];
  const kinds: string[] = [];
  for (const branch of defs?.agent?.allOf ?? []) {
    const b = branch as { if?: { properties?: { kind?: { const?: string } } }; then?: { $ref?: string } };
    const kind = b.if?.properties?.kind?.const;
    const ref = b.then?.$ref;
    if (kind && ref && allowedKeys(resolveRef(ref)).includes(key)) kinds.push(kind);
  }
  return kinds;
}

/** The description of property `key` in a schema object, following `$ref`s. */
export function describeKey(node: unknown, key: string): string | undefined {
  let property = isObject(node) && isObject(node.properties) ? node.properties[key] : undefined;
  for (let hops = 0; isObject(property) && hops < 8; hops++) {
    if (typeof property.description === "string") return property.description;
    property = typeof property.$ref === "string" ? resolveRef(property.$ref) : undefined;
  }
  return undefined;
}

/** The subschema a local `#/$defs/...` reference names. */
export function resolveRef(ref: string): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = teamSchema();
  for (const part of ref.slice(2).split("/")) node = isObject(node) ? node[part] : undefined;
  return node;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
