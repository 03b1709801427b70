/**
 * The one ajv setup for tools' parameter schemas, shared by the loader (a
 * schema that does not compile is a config error) and the tool layer (which
 * checks a model's arguments), so both accept exactly the same schemas.
 */
import { isIP } from "node:net";
import type { Ajv, Format } from "ajv";
import { lazily } from "../lazy.js";
import { didYouMean } from "./suggest.js";

const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function isDate(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (month < 1 || month > 12 || day < 1 || day > (DAYS_IN_MONTH[month - 1] ?? 0)) return false;
  return month !== 2 || day < 29 || (year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0));
}

function isTime(s: string): boolean {
  const m = /^(\d{2}):(\d{2}):(\d{2})(?:\.\d+)?(?:[zZ]|[+-](\d{2}):(\d{2}))?$/.exec(s);
  return m !== null && Number(m[1]) < 24 && Number(m[2]) < 60 && Number(m[3]) < 61 && Number(m[4] ?? 0) < 24 && Number(m[5] ?? 0) < 60;
}

function isDateTime(s: string): boolean {
  const t = s.search(/[tT ]/);
  return t === 10 && isDate(s.slice(0, t)) && /[zZ]|[+-]\d{2}:\d{2}$/.test(s) && isTime(s.slice(t + 1));
}

function isEmail(s: string): boolean {
  const at = s.lastIndexOf("@");
  if (at < 1 || s.length > 254 || /\s/.test(s)) return false;
  return isHostname(s.slice(at + 1)) && s.slice(at + 1).includes(".");
}

function isHostname(s: string): boolean {
  if (s.length === 0 || s.length > 253) return false;
  return s
    .replace(/\.$/, "")
    .split(".")
    .every((label) => /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i.test(label));
}

function isUri(s: string): boolean {
  if (!/^[a-z][a-z0-9+.-]*:/i.test(s) || /\s/.test(s)) return false;
  try {
    new URL(s);
    return true;
  } catch {
    return false;
  }
}

/**
 * The string formats a tool schema may use: those OpenAI's structured outputs
 * document, plus uri. Checked here without a dependency, in linear time.
 */
export const TOOL_FORMATS: Record<string, Format> = {
  date: isDate,
  time: isTime,
  "date-time": isDateTime,
  duration: /^P(?!$)(?:\d+Y)?(?:\d+M)?(?:\d+W)?(?:\d+D)?(?:T(?=\d)(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?$/,
  email: isEmail,
  hostname: isHostname,
  ipv4: (s: string) => isIP(s) === 4,
  ipv6: (s: string) => isIP(s) === 6,
  uri: isUri,
  uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i,
};

/** ajv, loaded when a first schema is compiled. */
export const ajvPackage = lazily<typeof import("ajv")>("ajv");

/** ajv's options for parameter schemas: strict, every error, no `$data`. */
export const PARAMETERS_OPTIONS = Object.freeze({ strict: true, allErrors: true, $data: false });

/**
 * A fresh ajv for parameter schemas: PARAMETERS_OPTIONS and the formats
 * above; `source` keeps each validator's code, for the build to write out.
 */
export function createParametersAjv(options: { source?: boolean } = {}): Ajv {
  const ajv = new (ajvPackage().Ajv)({ ...PARAMETERS_OPTIONS, ...(options.source ? { code: { source: true } } : {}) });
  for (const [name, format] of Object.entries(TOOL_FORMATS)) ajv.addFormat(name, format);
  return ajv;
}

/** Keywords a misspelt one is compared with. */
const KEYWORDS = [
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "description",
  "title",
  "default",
  "examples",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minItems",
  "maxItems",
  "uniqueItems",
  "anyOf",
  "oneOf",
  "allOf",
  "not",
  "$ref",
  "$defs",
  "definitions",
  "patternProperties",
  "propertyNames",
  "minProperties",
  "maxProperties",
  "multipleOf",
  "nullable",
];

/** ajv's compile error as a message that says what is wrong and what is expected. */
export function explainSchemaError(message: string): string {
  const keyword = /^strict mode: unknown keyword: "([^"]+)"/.exec(message);
  if (keyword?.[1] !== undefined) return `unknown keyword '${keyword[1]}'${didYouMean(keyword[1], KEYWORDS)}`;
  const format = /^unknown format "([^"]+)" ignored in schema at path "([^"]*)"/.exec(message);
  if (format?.[1] !== undefined) {
    return `unsupported format '${format[1]}' at ${format[2]}; supported formats: ${Object.keys(TOOL_FORMATS).join(", ")}`;
  }
  return message.replace(/^strict mode: /, "");
}
