import type { MathJsInstance, MathNode } from "mathjs";
import { lazily } from "../../lazy.js";
import type { Tool } from "../types.js";

// mathjs's one-file build, loaded on the first calculation: its package entry is 1,200 modules
// (seconds to import), the bundle one file. Same package and version, so the same behaviour.
// The bundle is mathjs's default instance, every function already made (the costly part):
// it is restricted in place rather than copied, as nothing else in the runtime loads it.
const bundle = lazily<MathJsInstance>("mathjs/lib/browser/math.js");

const FUNCTIONS = new Set([
  "sqrt", "cbrt", "abs", "sign", "round", "floor", "ceil", "fix", "min", "max", "pow", "mod", "hypot",
  "exp", "log", "log10", "log2",
  "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
]);
const CONSTANTS = new Set(["pi", "PI", "e", "E", "tau"]);
const OPERATORS = new Set(["add", "subtract", "multiply", "divide", "pow", "mod", "unaryMinus", "unaryPlus"]);
const REFUSED_NODES: Record<string, string> = {
  AssignmentNode: "assignments",
  FunctionAssignmentNode: "function definitions",
  AccessorNode: "property access",
  IndexNode: "indexing",
  ArrayNode: "matrices",
  ObjectNode: "objects",
  BlockNode: "several expressions",
  ConditionalNode: "conditionals",
  RangeNode: "ranges",
  RelationalNode: "comparisons",
};

let instance: { math: MathJsInstance; parse: MathJsInstance["parse"] } | undefined;

/**
 * A mathjs instance the expressions cannot change or escape: the functions
 * the mathjs security guide names are replaced by ones that refuse. The
 * whitelist walk in `checkNode` is the first line; this is the second.
 */
function restrictedMath(): { math: MathJsInstance; parse: MathJsInstance["parse"] } {
  if (instance) return instance;
  const math = bundle();
  if (typeof math.parse !== "function") throw new Error("mathjs did not load its function set");
  const parse = math.parse;
  const refuse = (name: string) => () => {
    throw new Error(`function ${name} is disabled`);
  };
  const disabled = ["import", "createUnit", "evaluate", "parse", "simplify", "derivative", "resolve", "compile"];
  math.import(Object.fromEntries(disabled.map((n) => [n, refuse(n)])), { override: true });
  instance = { math, parse };
  return instance;
}

function checkNode(node: MathNode, path: string, parent: MathNode | null): void {
  switch (node.type) {
    case "ConstantNode": {
      const value = (node as unknown as { value: unknown }).value;
      if (typeof value !== "number") throw new Error(`only numbers are allowed, not ${JSON.stringify(value)}`);
      return;
    }
    case "SymbolNode": {
      const name = (node as unknown as { name: string }).name;
      if (parent?.type === "FunctionNode" && path === "fn") {
        if (!FUNCTIONS.has(name)) {
          throw new Error(`function "${name}" is not allowed; allowed functions: ${[...FUNCTIONS].join(", ")}`);
        }
      } else if (!CONSTANTS.has(name)) {
        throw new Error(`unknown symbol "${name}"; only the constants pi and e are defined`);
      }
      return;
    }
    case "OperatorNode": {
      const fn = (node as unknown as { fn: string; op: string }).fn;
      if (!OPERATORS.has(fn)) {
        throw new Error(`operator "${(node as unknown as { op: string }).op}" is not allowed; use + - * / ^ %`);
      }
      return;
    }
    case "FunctionNode":
    case "ParenthesisNode":
      return;
    default:
      throw new Error(`${REFUSED_NODES[node.type] ?? node.type} not allowed in a calculator expression`);
  }
}

/** Evaluates an arithmetic expression to a finite real number, never through `eval`. */
export function calculate(expression: string): number {
  const { parse } = restrictedMath();
  let root: MathNode;
  try {
    root = parse(expression);
  } catch (err) {
    throw new Error(`cannot parse "${expression}": ${err instanceof Error ? err.message : String(err)}`);
  }
  root.traverse((node, path, parent) => checkNode(node, path, parent));
  const value: unknown = root.compile().evaluate({});
  if (typeof value !== "number") {
    const kind = value !== null && typeof value === "object" && "type" in value ? String(value.type) : typeof value;
    throw new Error(`"${expression}" does not evaluate to a real number (got ${kind})`);
  }
  if (!Number.isFinite(value)) throw new Error(`"${expression}" is not finite (${value})`);
  // 14 significant digits hide binary noise such as 0.1 + 0.2 = 0.30000000000000004.
  return Number(value.toPrecision(14));
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
      return { expression, result: calculate(expression) };
    },
  };
}
