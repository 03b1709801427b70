/**
 * The team file's JSON Schema (`schemas/team.schema.json`), read once from the
 * package and compiled once with ajv.
 */
import { readFileSync } from "node:fs";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import type { RawTeam } from "./raw-team.js";

/** Path of `schemas/team.schema.json` inside the package (same from src/ and dist/). */
export const TEAM_SCHEMA_URL = new URL("../../schemas/team.schema.json", import.meta.url);

export type SchemaObject = Record<string, unknown>;

let schema: SchemaObject | undefined;
let validator: ValidateFunction<RawTeam> | undefined;

/** The schema as parsed JSON. */
export function teamSchema(): SchemaObject {
  schema ??= JSON.parse(readFileSync(TEAM_SCHEMA_URL, "utf8")) as SchemaObject;
  return schema;
}

/**
 * The compiled validator: strict, every error, defaults filled into the data
 * it checks. A value it accepts is a RawTeam: raw-team.ts is generated from
 * the same schema (a test keeps it so), which is what makes this the one
 * trusted step from `unknown` to typed.
 */
export function teamValidator(): ValidateFunction<RawTeam> {
  if (!validator) {
    // The schema itself is checked against the 2020-12 meta-schema by a test;
    // skipping that here, and compiling each $ref once, halves start-up time.
    const ajv = new Ajv2020({
      strict: true,
      allErrors: true,
      useDefaults: true,
      verbose: true,
      $data: false,
      validateSchema: false,
      inlineRefs: false,
      // ajv's optimiser passes cost ~30% of compile time; a team file is validated once per process.
      code: { optimize: false },
    });
    validator = ajv.compile<RawTeam>(teamSchema());
  }
  return validator;
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
