import type { Tool } from "../types.js";
import { calculate } from "./arithmetic.js";

export { calculate };

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
      return { expression, result: calculate(expression) };
    },
  };
}
