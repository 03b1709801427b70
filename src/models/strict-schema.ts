/**
 * A JSON Schema made fit for `response_format: {type: "json_schema", strict:
 * true}` (docs/model-servers.md#structured-output): strict mode takes a subset of
 * JSON Schema, so `oneOf` becomes `anyOf`, every object lists all its
 * properties as required and allows no others, and the keywords strict mode
 * refuses (length and size bounds, patterns, formats, defaults, `$schema`,
 * `$id`) are dropped. The runtime still validates the reply against the full
 * schema with ajv, so nothing the dropped keywords said is lost.
 */
import type { JsonSchema } from "../config/types.js";

const DROPPED = new Set([
  "$schema",
  "$id",
  "default",
  "examples",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minItems",
  "maxItems",
  "uniqueItems",
  "minProperties",
  "maxProperties",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
]);

export function strictSchema(schema: JsonSchema): JsonSchema {
  return strict(schema) as JsonSchema;
}

function strict(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(strict);
  if (node === null || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (DROPPED.has(key)) continue;
    if (key === "properties" || key === "$defs") {
      out[key] = Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, strict(v)]));
    } else {
      out[key === "oneOf" ? "anyOf" : key] = strict(value);
    }
  }
  if (out["type"] === "object" || out["properties"] !== undefined) {
    const properties = (out["properties"] ?? {}) as Record<string, unknown>;
    out["properties"] = properties;
    out["required"] = Object.keys(properties);
    out["additionalProperties"] = false;
  }
  return out;
}
