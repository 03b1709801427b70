/**
 * The built-in tools' argument validators, written as code by `npm run build`
 * (scripts/precompile-validators.mjs, like the team schema's:
 * src/config/precompiled.ts): a run whose tools are all built in compiles no
 * schema and loads none of ajv's compiler (~85 ms of `runtime exec`,
 * docs/performance.md). A validator is used only for the very schema object
 * of its tool, and only when its stamp says it was made from that schema and
 * these options; otherwise the caller compiles.
 */
import type { ValidateFunction } from "ajv";
import { buildStamp } from "../../built.js";
import { loadPrecompiled, precompiledSource } from "../../config/precompiled.js";
import { createParametersAjv, PARAMETERS_OPTIONS, TOOL_FORMATS } from "../../config/tool-parameters.js";
import type { JsonSchema } from "../../config/types.js";
import { CALCULATOR_PARAMETERS } from "./calculator.js";
import { TERMINATE_PARAMETERS } from "./terminate.js";

const SCHEMAS: ReadonlyMap<JsonSchema, string> = new Map<JsonSchema, string>([
  [CALCULATOR_PARAMETERS, "calculator"],
  [TERMINATE_PARAMETERS, "terminate"],
]);

const fileOf = (tool: string): URL => new URL(`./${tool}-arguments.cjs`, import.meta.url);

/** Names the schema's text, ajv's options and the formats it knows. */
function stamp(schema: JsonSchema): string {
  return buildStamp(JSON.stringify(schema), JSON.stringify(PARAMETERS_OPTIONS), Object.keys(TOOL_FORMATS).join(","));
}

/** The build's validator for a built-in tool's own parameter schema; undefined for any other schema or without one. */
export function builtinArgsValidator(schema: JsonSchema): ValidateFunction | undefined {
  const tool = SCHEMAS.get(schema);
  return tool === undefined ? undefined : loadPrecompiled<ValidateFunction>(fileOf(tool), stamp(schema));
}

/** What the build writes: each built-in tool's validator as a stamped CommonJS module, and where. */
export function builtinArgsValidatorSources(): { file: URL; source: string }[] {
  return [...SCHEMAS].map(([schema, tool]) => {
    const ajv = createParametersAjv({ source: true });
    const validate = ajv.compile(schema);
    return { file: fileOf(tool), source: precompiledSource(ajv, validate, stamp(schema), `the ${tool} tool's parameters`) };
  });
}
