import type { Ajv, ErrorObject, ValidateFunction } from "ajv";
import { createParametersAjv, explainSchemaError } from "../config/tool-parameters.js";
import type { JsonSchema } from "../config/types.js";
import { describeError } from "../errors.js";
import { builtinArgsValidator } from "./builtin/validators.js";
import { parseJsonTolerant } from "../parse/json.js";

/** The result of reading a model's argument text. */
export type ParsedArgs = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** The result of checking arguments against a tool's schema. */
export type ArgsCheck = { ok: true } | { ok: false; error: string };

/**
 * Parse the raw `arguments` text of a tool call. Strict JSON first; then the
 * slips models commonly make (a fenced ```json block, trailing commas, an
 * empty string for a tool without parameters) are forgiven, since asking the
 * model to repair those costs a whole round for nothing.
 */
export function parseToolArguments(raw: string): ParsedArgs {
  const text = raw.trim();
  if (text === "") return { ok: true, value: {} };
  // Arguments are the object or nothing: no `{...}` span is cut out of them, and
  // only a fence wrapping them all is taken off. So a value that parses but is not
  // an object is the model's answer, reported with its type.
  let refused: { value: unknown } | undefined;
  const parsed = parseJsonTolerant(text, {
    fences: "whole",
    maxSpanStarts: 0,
    repair: true,
    accept: (value) => {
      if (isRecord(value)) return true;
      refused ??= { value };
      return false;
    },
  });
  if (parsed.ok) return { ok: true, value: parsed.value as Record<string, unknown> };
  if (refused) {
    return { ok: false, error: `arguments must be a JSON object, got ${describeJsonType(refused.value)}: ${clip(raw)}` };
  }
  // One line of the parse error: it quotes the text, which follows in full anyway.
  const reason = parsed.error?.split("\n")[0];
  return { ok: false, error: `arguments are not valid JSON (${reason}): ${clip(raw)}` };
}

/**
 * Validates tool arguments with ajv: strict, every error reported, no `$data`.
 * Each schema object is compiled once and the validator kept beside it.
 */
export class ArgsValidator {
  private ajv: Ajv | undefined;
  private readonly compiled = new WeakMap<JsonSchema, ValidateFunction | string>();

  /** Why a parameter schema cannot be compiled, or undefined when it can. */
  schemaProblem(schema: JsonSchema): string | undefined {
    const validate = this.compile(schema);
    return typeof validate === "string" ? validate : undefined;
  }

  check(tool: string, schema: JsonSchema, args: Record<string, unknown>): ArgsCheck {
    const validate = this.compile(schema);
    if (typeof validate === "string") {
      return { ok: false, error: `tool "${tool}" has an invalid parameter schema: ${validate}` };
    }
    if (validate(args)) return { ok: true };
    return { ok: false, error: `invalid arguments for ${tool}: ${formatAjvErrors(validate.errors ?? [])}` };
  }

  /** What is wrong with `value` under `schema` (a guardrail's json_schema, docs/guardrails.md); undefined when it matches. */
  mismatch(schema: JsonSchema, value: unknown): string | undefined {
    const validate = this.compile(schema);
    if (typeof validate === "string") return `the schema is invalid: ${validate}`;
    return validate(value) ? undefined : formatAjvErrors(validate.errors ?? []);
  }

  private compile(schema: JsonSchema): ValidateFunction | string {
    let entry = this.compiled.get(schema);
    if (entry === undefined) {
      // A built-in tool's validator comes from the build (src/tools/builtin/validators.ts).
      entry = builtinArgsValidator(schema);
      if (entry !== undefined) {
        this.compiled.set(schema, entry);
        return entry;
      }
      try {
        this.ajv ??= createParametersAjv();
        entry = this.ajv.compile(schema);
      } catch (err) {
        entry = explainSchemaError(describeError(err));
      } finally {
        // The compiled function is kept here; ajv's registry must not keep the `$id`,
        // or the next team (or the same team loaded again) with that `$id` fails.
        this.ajv?.removeSchema(schema);
      }
      this.compiled.set(schema, entry);
    }
    return entry;
  }
}

/** The process-wide validator: every schema object is compiled once, whichever ToolBox meets it first. */
export const argsValidator = new ArgsValidator();

/** "/expression must be string; / must have required property 'x'". */
export function formatAjvErrors(errors: ErrorObject[]): string {
  return errors
    .map((e) => {
      const where = e.instancePath === "" ? "/" : e.instancePath;
      const extra =
        e.keyword === "additionalProperties"
          ? ` (${String((e.params as { additionalProperty?: unknown }).additionalProperty)})`
          : e.keyword === "enum"
            ? ` (${((e.params as { allowedValues?: unknown[] }).allowedValues ?? []).map((v) => JSON.stringify(v)).join(", ")})`
            : "";
      return `${where} ${e.message ?? "is invalid"}${extra}`;
    })
    .join("; ");
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function describeJsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

function clip(text: string, max = 500): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}
