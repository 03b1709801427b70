/**
 * The `calculator` built-in (docs/calculator.md): mathjs parses and
 * evaluates; this file lets through arithmetic on real numbers and nothing
 * else. Every node of the parsed expression is checked against a whitelist
 * (numbers, the constants, the allowed functions, `+ - * / ^ %` and `mod`,
 * parentheses) before anything is evaluated, and the mathjs instance has the
 * functions its security guide names disabled, as a second line.
 */
import type { create as createMath, FactoryFunctionMap, MathJsInstance, MathNode } from "mathjs";
import { RuntimeError } from "../../errors.js";
import type { Tool } from "../types.js";

export const FUNCTIONS: ReadonlySet<string> = new Set([
  "sqrt", "cbrt", "abs", "sign", "round", "floor", "ceil", "fix", "min", "max", "pow", "mod", "hypot",
  "exp", "log", "log10", "log2",
  "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
]);
export const CONSTANTS: ReadonlySet<string> = new Set(["pi", "PI", "e", "E", "tau"]);
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
/** The functions mathjs's security guide disables: none is reachable past the whitelist, and none works if it were. */
const DISABLED = ["import", "createUnit", "reviver", "evaluate", "parse", "simplify", "derivative", "resolve", "compile"];

/** Brackets nest at most this deep: mathjs's parser recurses about twenty functions a level. */
const MAX_NESTING = 100;
/**
 * A `%` nests inside brackets after another `%` at most this deep: mathjs
 * tries each as a percentage and parses what follows again as `mod`, so the
 * time doubles a level (`1%(1%(…` 16 levels: 2 s, 18: 13 s; `1%-(…` and
 * `1%sqrt(…` alike). `mod` is parsed once.
 */
const MAX_PERCENT_NESTING = 8;

/**
 * mathjs's one-file build, imported on the first calculation: the package
 * entry is ~1,200 modules (3-4 s to import on a busy machine), the bundle
 * one file (~0.5 s). Same package and version, so the same behaviour. The
 * specifier is a variable because the package declares no types for it.
 */
const BUNDLE = "mathjs/lib/browser/math.js";
let loading: Promise<MathJsInstance["parse"]> | undefined;

async function loadParse(): Promise<MathJsInstance["parse"]> {
  const { create, all } = ((await import(BUNDLE)) as { default: { create: typeof createMath; all: FactoryFunctionMap } }).default;
  const math = create(all);
  const parse = math.parse;
  const refuse = (name: string) => () => {
    throw fail(`function ${name} is disabled`);
  };
  math.import(Object.fromEntries(DISABLED.map((name) => [name, refuse(name)])), { override: true });
  return parse;
}

const fail = (message: string) => new RuntimeError("TOOL_FAILED", message);

/** Some text of the expression in a message: quoted, on one line, at most 60 characters. */
function quote(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
}

/** Characters models write for arithmetic that is spelt otherwise here, named when an expression does not parse. */
const SPELLINGS: [RegExp, string][] = [
  [/\*\*/, "write powers with ^"],
  [/[×·]/, "write * for ×"],
  [/÷/, "write / for ÷"],
  [/[−–]/, "write - for −"],
  [/[²³]/, "write ^2 or ^3 for ² and ³"],
  [/√/, "write sqrt(…) for √"],
  [/π/, "write pi for π"],
  [/\d,\d{3}\b/, "write numbers without thousands separators"],
];

/** Refuse, before parsing, what would make mathjs's parser take exponential time or exhaust the stack. */
function checkNesting(expression: string): void {
  // One frame a bracket level: whether a % came at this level yet, and how many levels with a % enclose it.
  const frames = [{ percent: false, chain: 0 }];
  for (const c of expression) {
    const frame = frames[frames.length - 1]!;
    if (c === "%") {
      frame.percent = true;
      if (frame.chain >= MAX_PERCENT_NESTING) throw fail(`a % inside brackets after a % nests more than ${MAX_PERCENT_NESTING} deep; write mod instead`);
    } else if (c === "(" || c === "[" || c === "{") {
      frames.push({ percent: false, chain: frame.chain + (frame.percent ? 1 : 0) });
      if (frames.length > MAX_NESTING + 1) throw fail(`brackets nested more than ${MAX_NESTING} deep`);
    } else if ((c === ")" || c === "]" || c === "}") && frames.length > 1) {
      frames.pop();
    }
  }
}

function checkNode(node: MathNode, path: string, parent: MathNode | null): void {
  switch (node.type) {
    case "ConstantNode": {
      const { value } = node as unknown as { value: unknown };
      if (typeof value !== "number") throw fail(`only numbers are allowed, not ${JSON.stringify(value)}`);
      return;
    }
    case "SymbolNode": {
      const { name } = node as unknown as { name: string };
      if (parent?.type === "FunctionNode" && path === "fn") {
        if (!FUNCTIONS.has(name)) throw fail(`function ${JSON.stringify(name)} is not allowed; allowed functions: ${[...FUNCTIONS].join(", ")}`);
      } else if (FUNCTIONS.has(name)) {
        throw fail(`function "${name}" needs its arguments in parentheses, e.g. ${name}(2)`);
      } else if (!CONSTANTS.has(name)) {
        throw fail(`unknown symbol ${JSON.stringify(name)}; the constants are pi, e and tau`);
      }
      return;
    }
    case "OperatorNode": {
      const { fn, op } = node as unknown as { fn: string; op: string };
      if (!OPERATORS.has(fn)) throw fail(`operator "${op}" is not allowed; use + - * / ^ %`);
      return;
    }
    case "FunctionNode":
    case "ParenthesisNode":
      return;
    default:
      throw fail(`${REFUSED_NODES[node.type] ?? node.type} not allowed in a calculator expression`);
  }
}

/**
 * The value of `expression`, a finite real number to 14 significant digits,
 * or an error worded for the model to repair its call: "cannot parse …" for
 * syntax, the construct or name refused, "does not evaluate to a real
 * number", "is not finite"; with a hint when the expression spells
 * arithmetic otherwise (`×`, `**`, a thousands separator).
 */
export async function calculate(expression: string): Promise<number> {
  const parse = await (loading ??= loadParse());
  try {
    return evaluate(parse, expression);
  } catch (err) {
    const hint = SPELLINGS.find(([pattern]) => pattern.test(expression));
    throw hint && err instanceof RuntimeError ? fail(`${err.message}; ${hint[1]}`) : err;
  }
}

/** A message of mathjs's, or what a stack overflow in its recursion means here. */
const reason = (err: unknown) =>
  err instanceof RangeError && /call stack/.test(err.message) ? "nested too deep" : err instanceof Error ? err.message : String(err);

function evaluate(parse: MathJsInstance["parse"], expression: string): number {
  // Surrounding blank lines are not "several expressions".
  const text = expression.trim();
  if (!text) throw fail(`cannot parse ${quote(expression)}: the expression is empty`);
  checkNesting(text);
  let root: MathNode;
  try {
    root = parse(text);
  } catch (err) {
    throw fail(`cannot parse ${quote(expression)}: ${reason(err)}`);
  }
  let value: unknown;
  try {
    root.traverse(checkNode);
    value = root.compile().evaluate({});
  } catch (err) {
    throw err instanceof RuntimeError ? err : fail(`${quote(expression)}: ${reason(err)}`);
  }
  if (typeof value !== "number") {
    const kind = value !== null && typeof value === "object" && "type" in value ? String(value.type) : typeof value;
    throw fail(`${quote(expression)} does not evaluate to a real number (got ${kind})`);
  }
  if (!Number.isFinite(value)) throw fail(`${quote(expression)} is not finite (${value})`);
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
      return { expression, result: await calculate(expression) };
    },
  };
}
