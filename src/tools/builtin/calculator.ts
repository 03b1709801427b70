/**
 * The `calculator` built-in (docs/calculator.md): `{expression}` in,
 * `{expression, result}` out, computed by the evaluator in ./expression.ts;
 * a refusal names how the model should spell what it wrote.
 */
import { RuntimeError } from "../../errors.js";
import type { Tool } from "../types.js";
import { evaluate } from "./expression.js";

/** Characters models write for arithmetic that is spelt otherwise here, named when an expression is refused. */
const SPELLINGS: [RegExp, string][] = [
  [/\*\*/, "write powers with ^"],
  [/[×·]/, "write * for ×"],
  [/\d\s*x\s*[\d(]/, "write * for x"],
  [/÷/, "write / for ÷"],
  [/[−–]/, "write - for −"],
  [/[²³]/, "write ^2 or ^3 for ² and ³"],
  [/√/, "write sqrt(…) for √"],
  [/π/, "write pi for π"],
  [/\d,\d{3}\b/, "write numbers without thousands separators"],
];

/**
 * The value of `expression`, a finite real number to 14 significant digits,
 * or a RuntimeError("TOOL_FAILED") worded for the model to repair its call:
 * "cannot parse …" for syntax, the name refused, "cannot evaluate …" for a
 * division by zero or a value that is not a finite real number; with a hint
 * when the expression spells arithmetic otherwise (`×`, `**`, `²`, a
 * thousands separator).
 */
export async function calculate(expression: string): Promise<number> {
  try {
    return evaluate(expression);
  } catch (err) {
    const hint = SPELLINGS.find(([pattern]) => pattern.test(expression));
    throw hint && err instanceof RuntimeError ? new RuntimeError("TOOL_FAILED", `${err.message}; ${hint[1]}`) : err;
  }
}

// One schema object for every instance: its validator comes precompiled from the build
// (src/tools/builtin/validators.ts), or ajv compiles it once per process.
export const CALCULATOR_PARAMETERS = Object.freeze({
  type: "object",
  properties: {
    expression: { type: "string", minLength: 1, maxLength: 2000, description: "e.g. round(pi * 5^2, 2)" },
  },
  required: ["expression"],
  additionalProperties: false,
});

/** The `calculator` built-in: `{expression}` in, `{expression, result}` out. */
export function calculatorTool(): Tool {
  return {
    name: "calculator",
    description:
      "Evaluate an arithmetic expression: + - * / ^ %, parentheses, constants pi and e, and functions " +
      "sqrt, sin, cos, tan, log, log10, exp, abs, round(x, digits), floor, ceil, min, max, pow.",
    parameters: CALCULATOR_PARAMETERS,
    effect: "read",
    timeout_ms: 5000,
    max_output_bytes: 4096,
    execute: async (args) => {
      const expression = String(args.expression);
      return { expression, result: await calculate(expression) };
    },
  };
}
