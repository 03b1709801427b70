/**
 * The calculator's own arithmetic against mathjs, which the calculator ran on
 * before (src/tools/builtin/arithmetic.ts): the same value for every
 * expression of the calculator's grammar, generated at random from a fixed
 * seed, and a refusal wherever mathjs's restricted use refused.
 */
import { createRequire } from "node:module";
import type { MathJsInstance, MathNode } from "mathjs";
import { describe, expect, it } from "vitest";
import { calculate, CONSTANTS, FUNCTIONS } from "../../src/tools/builtin/arithmetic.js";

const math = createRequire(import.meta.url)("mathjs/lib/browser/math.js") as MathJsInstance;

const OPERATORS = new Set(["add", "subtract", "multiply", "divide", "pow", "mod", "unaryMinus", "unaryPlus"]);

/** The calculator as it was on mathjs: parse, allow only its whitelist, evaluate. */
function reference(expression: string): { value: number; complex?: boolean } | { error: string; complex?: boolean } {
  let root: MathNode;
  try {
    root = math.parse(expression);
  } catch (err) {
    return { error: `cannot parse: ${(err as Error).message}` };
  }
  let refused: string | undefined;
  root.traverse((node, path, parent) => {
    if (refused) return;
    const n = node as unknown as { type: string; name?: string; fn?: string; value?: unknown };
    if (n.type === "ConstantNode" && typeof n.value !== "number") refused = "not a number";
    else if (n.type === "SymbolNode") {
      const called = parent?.type === "FunctionNode" && path === "fn";
      if (called ? !FUNCTIONS.has(n.name!) : !CONSTANTS.has(n.name!)) refused = `name ${n.name}`;
    } else if (n.type === "OperatorNode" && !OPERATORS.has(n.fn!)) refused = `operator ${n.fn}`;
    else if (!["ConstantNode", "SymbolNode", "OperatorNode", "FunctionNode", "ParenthesisNode"].includes(n.type)) refused = n.type;
  });
  if (refused) return { error: refused };
  // Did any part go complex on the way (abs(sqrt(-4)) is real again in mathjs; the calculator refuses it)?
  let complex = false;
  root.traverse((node) => {
    if (node.type !== "FunctionNode" && node.type !== "OperatorNode") return;
    try {
      const part: unknown = node.compile().evaluate({});
      if (part !== null && typeof part === "object" && (part as { type?: string }).type === "Complex") complex = true;
    } catch {
      // errors show in the whole expression's evaluation
    }
  });
  try {
    const value: unknown = root.compile().evaluate({});
    if (typeof value !== "number") return { error: "not a real number", complex };
    if (!Number.isFinite(value)) return { error: "not finite", complex };
    return complex ? { value: Number(value.toPrecision(14)), complex } : { value: Number(value.toPrecision(14)) };
  } catch (err) {
    return { error: (err as Error).message, complex };
  }
}

function ours(expression: string): { value: number } | { error: string } {
  try {
    return { value: calculate(expression) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/**
 * Where mathjs has a value and the calculator refuses on purpose: numbers in
 * hexadecimal, binary or octal, and whatever follows a percentage mathjs could
 * not read on from. Its look-ahead leaves what it tried consumed and reads on
 * past it (`0.1%[` is 0.001, `667 % sign(tau>` is 6.67); the calculator says
 * it cannot parse.
 */
const refusedOnPurpose = (expression: string) => expression.includes("%") || /0[xbo]/.test(expression);

/** mulberry32: a small seeded generator, so a failure names an expression that fails again. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Expressions of the calculator's grammar, with the spacing, implicit products and percentages models write. */
function generator(seed: number): (depth?: number) => string {
  const r = random(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const sp = () => pick(["", "", " ", "  "]);
  const number = () =>
    pick([
      () => String(Math.floor(r() * 10)),
      () => String(Math.floor(r() * 1000)),
      () => (r() * 100).toFixed(Math.floor(r() * 4)),
      () => `.${Math.floor(r() * 100)}`,
      () => `${Math.floor(r() * 9) + 1}e${pick(["", "-", "+"])}${Math.floor(r() * 4)}`,
      () => `${Math.floor(r() * 10)}.`,
      () => "0.1",
      () => "2.5",
      () => "1.005",
    ])();
  const functions = [...FUNCTIONS];
  const expression = (depth = 0): string => {
    const leaf = depth > 3 || r() < 0.3;
    if (leaf) return r() < 0.75 ? number() : pick([...CONSTANTS.keys()]);
    return pick([
      () => `${expression(depth + 1)}${sp()}${pick(["+", "-", "*", "/", "^", "%", " mod "])}${sp()}${expression(depth + 1)}`,
      () => `${pick(["-", "+", "- "])}${expression(depth + 1)}`,
      () => `(${sp()}${expression(depth + 1)}${sp()})`,
      () => {
        const [name, { arity }] = pick(functions);
        const count = arity[1] === Infinity ? arity[0] + Math.floor(r() * 3) : arity[0] + Math.floor(r() * (arity[1] - arity[0] + 1));
        const args = Array.from({ length: count }, (_, i) =>
          ["round", "floor", "ceil", "fix"].includes(name) && i === 1 ? String(Math.floor(r() * 5)) : expression(depth + 1),
        );
        return `${name}(${args.join(`,${sp()}`)})`;
      },
      () => `${number()}${sp()}${pick(["pi", "e", "tau", `(${expression(depth + 1)})`, `sqrt(${expression(depth + 1)})`])}`,
      () => `(${expression(depth + 1)})${sp()}(${expression(depth + 1)})`,
      () => `${number()}%${pick(["", ` ${pick(["+", "-", "*", "/"])} ${expression(depth + 1)}`])}`,
      () => `${expression(depth + 1)} ${pick(["+", "-"])} ${number()}%`,
      () => `${number()}/${number()}${pick(["pi", "e", `(${number()})`])}`,
    ])();
  };
  return expression;
}

describe("arithmetic, against mathjs", () => {
  it("gives mathjs's value, or refuses where it refused, on 6,000 generated expressions", () => {
    const next = generator(20261125);
    const mismatches: string[] = [];
    let values = 0;
    for (let i = 0; i < 6000; i++) {
      const expression = next();
      const want = reference(expression);
      const got = ours(expression);
      if (want.complex && !("value" in got)) {
        // A complex part on the way: refused, even where mathjs came back to a real number.
        if ("value" in want && !/does not evaluate to a real number|is not finite/.test(got.error)) {
          mismatches.push(`${expression}: mathjs ${want.value} by way of a complex number, ours ${got.error}`);
        }
      } else if ("value" in want) {
        values++;
        if (!("value" in got) || !Object.is(got.value, want.value)) mismatches.push(`${expression}: mathjs ${want.value}, ours ${JSON.stringify(got)}`);
      } else if ("value" in got && !want.complex) {
        mismatches.push(`${expression}: mathjs refused (${want.error}), ours ${got.value}`);
      } else if (want.complex && "value" in got) {
        mismatches.push(`${expression}: went complex in mathjs, ours ${got.value}`);
      }
    }
    expect(mismatches.slice(0, 20)).toEqual([]);
    // Most generated expressions have a value: the comparison is mostly of numbers, not of errors.
    expect(values).toBeGreaterThan(3000);
  });

  it("agrees on 4,000 expressions with a character changed: a value only where mathjs had the same one", () => {
    const next = generator(7);
    const r = random(11);
    const noise = [..."=<>!'[]{}.,;:?~&|\"#%^*/+-() \nx0e"];
    const mismatches: string[] = [];
    let refused = 0;
    for (let i = 0; i < 4000; i++) {
      const base = next();
      const at = Math.floor(r() * (base.length + 1));
      const drop = r() < 0.3 ? 1 : 0;
      const expression = base.slice(0, at) + noise[Math.floor(r() * noise.length)] + base.slice(at + drop);
      const want = reference(expression);
      const got = ours(expression);
      if ("value" in got) {
        // Blank lines around an expression are a second, empty expression to mathjs; the calculator trims them.
        const trimmed = expression.trim() !== expression ? reference(expression.trim()) : want;
        if (!("value" in trimmed) || !Object.is(got.value, trimmed.value)) mismatches.push(`${JSON.stringify(expression)}: ours ${got.value}, mathjs ${JSON.stringify(want)}`);
      } else {
        refused++;
        if ("value" in want && !want.complex && !refusedOnPurpose(expression)) {
          mismatches.push(`${JSON.stringify(expression)}: ours refused (${got.error}), mathjs ${want.value}`);
        }
      }
    }
    expect(mismatches.slice(0, 20)).toEqual([]);
    expect(refused).toBeGreaterThan(500);
  });

  it.each([
    ["-2^2", -4],
    ["2^-1", 0.5],
    ["2^3^2", 512],
    ["-(-2)^2", -4],
    ["2^-2^-1", 0.70710678118655],
    ["50%", 0.5],
    ["5 %", 0.05],
    ["100 + 10%", 110],
    ["100-10%", 90],
    ["10%*2", 0.2],
    ["10% 2", 0],
    ["2^10%", 10.24],
    ["8 % 3", 2],
    ["-8 % 3", 1],
    ["8 % -3", -1],
    ["5.5 % 2", 1.5],
    ["-10 mod 3", 2],
    ["10 mod 3 mod 2", 1],
    ["mod(-1, 3)", 2],
    ["mod(5, 0)", 5],
    ["2pi", 6.2831853071796],
    ["2(3)", 6],
    ["(1)2", 2],
    ["(1 + 2)(3 + 4)", 21],
    ["2 sqrt(4)", 4],
    ["sqrt(4)(2)", 4],
    ["1/2pi", 1.5707963267949],
    ["-1/2pi", -1.5707963267949],
    ["1/2/3pi", 0.47746482927569],
    ["10 / 2 pi", 15.707963267949],
    ["2e", 5.4365636569181],
    ["1e3", 1000],
    [".5", 0.5],
    ["5.", 5],
    ["round(-2.5)", -3],
    ["round(2.5)", 3],
    ["round(1.005, 2)", 1.01],
    ["round(2.345, 2)", 2.35],
    ["floor(2.9999999999999996)", 3],
    ["floor(-0.5)", -1],
    ["ceil(1.2345, 2)", 1.24],
    ["fix(-2.7)", -2],
    ["fix(3.18, 1)", 3.1],
    ["sign(-3)", -1],
    ["log(8, 2)", 3],
    ["cbrt(-8)", -2],
    ["hypot(3, -4)", 5],
    ["min(3, 1, 2)", 1],
    ["tau / 2", 3.1415926535898],
    ["sin(pi)", 1.2246467991474e-16],
    ["1 + 2 # a comment", 3],
    ["\t1 +\t2", 3],
    ["1 +\u00a02", 3],
    ["1 +\n2", 3],
    ["(1\n+ 2)", 3],
    ["1 + 1\n", 2],
    ["1 / Infinity", 0],
  ])("%j = %d, as in mathjs", (expression, expected) => {
    expect(calculate(expression)).toBe(expected);
    const want = reference(expression);
    if (expression !== "1 + 1\n") expect(want).toEqual({ value: expected });
  });

  it.each([
    ["sqrt(-1)", /does not evaluate to a real number \(got Complex\): sqrt\(-1\) is not real: sqrt takes numbers >= 0/],
    ["(-8)^(1/3)", /a negative number to a fractional power; for a cube root use cbrt/],
    ["(1 +\n 2) +* 3", /^cannot parse "\(1 \+\\n 2\) \+\* 3": Value expected, got "\*"/],
    ["sqrt(\n-4)", /^"sqrt\(\\n-4\)" does not evaluate to a real number/],
    ["1 + ".repeat(100) + "+", /^cannot parse "1 \+ 1 \+ (1 \+ )+1\.\.\.": /],
    ["log(-1)", /got Complex/],
    ["log(8, -2)", /got Complex/],
    ["asin(2)", /got Complex/],
    ["(-8)^(1/3)", /got Complex/],
    ["pow(-2, 0.5)", /got Complex/],
    ["1e400", /is not finite \(Infinity\)/],
    ["exp(1000)", /is not finite/],
    ["2 3", /cannot parse "2 3": Unexpected part "3"/],
    ["2e+", /cannot parse/],
    ["1.5.3", /cannot parse/],
    ["(1 + 2", /cannot parse "\(1 \+ 2": Parenthesis \) expected/],
    ["", /cannot parse/],
    ["2 @ 3", /cannot parse/],
    ["max()", /function max takes at least 1 argument, not 0/],
    ["sqrt(1, 2)", /function sqrt takes 1 argument, not 2/],
    ["round(1, 2, 3)", /function round takes 1 or 2 arguments, not 3/],
    ["round(2.5, 1.5)", /the number of decimals in round\(x, n\) must be an integer from 0 to 15, not 1.5/],
    ["round(1, 16)", /in round\(x, n\) must be an integer from 0 to 15, not 16/],
    ["floor(1, 0.5)", /in floor\(x, n\) must be an integer from 0 to 15, not 0.5/],
    ["fix(-1, 16)", /in fix\(x, n\) must be an integer from 0 to 15, not 16/],
    ["1,000 + 5", /Unexpected ","; write numbers without thousands separators/],
    ["2**3", /write powers with \^/],
    ["2 × 3", /character "×" \(U\+00D7\) is not allowed; write \*/],
    ["\u0455qrt(4)", /function "ѕqrt" \(it has non-ASCII letters\) is not allowed/],
    ["sqrt 4", /function "sqrt" needs its arguments in parentheses/],
    ["e2", /unknown symbol "e2"/],
    ["pi(2)", /function "pi" is not allowed/],
    ["1; 2", /several expressions not allowed/],
    ["1\n2", /several expressions not allowed/],
    ["1 ? 2 : 3", /conditionals not allowed/],
    ["1:3", /ranges not allowed/],
    ["1 < 2", /operator "<" is not allowed/],
    ["1 & 2", /operator "&" is not allowed/],
    ["1 and 2", /operator "and" is not allowed/],
    ["~1", /operator "~" is not allowed/],
    ["2 .* 3", /operator ".\*" is not allowed/],
    ["2'", /operator "'" is not allowed/],
    ["1 ?? 2", /operator "\?\?" is not allowed/],
    ["5 in", /operator "in" is not allowed/],
    ["(1)[1]", /indexing not allowed/],
    ["{a: 1}", /objects not allowed/],
    ["'abc'", /only numbers are allowed, not "abc"/],
    ['max("1", 2)', /only numbers are allowed/],
    ["sqrt(x)", /unknown symbol "x"/],
    ["true + 1", /only numbers are allowed, not true/],
    ["NaN", /is not finite \(NaN\)/],
    ["-Infinity", /is not finite \(-Infinity\)/],
    ["__proto__", /unknown symbol "__proto__"/],
    ["constructor(1)", /function "constructor" is not allowed/],
    ["toString", /unknown symbol "toString"/],
  ])("refuses %j", (expression, message) => {
    expect(() => calculate(expression)).toThrow(message);
    expect(reference(expression)).toHaveProperty("error");
  });

  it("hostile input ends at once: nested percentages (each level parsed twice), deep brackets, long chains", () => {
    // Without remembering what follows each `%`, time doubled a level: 24 levels took ~6 s, 40 would take days.
    // 1 mod 2 = 1, 1 mod 1 = 0, 1 mod 0 = 1, … 24 times.
    const started = performance.now();
    expect(calculate("1%(".repeat(24) + "2" + ")".repeat(24))).toBe(0);
    // A bound that only catches a hang (24 levels took ~6 s); the 99 levels below would never end.
    expect(performance.now() - started).toBeLessThan(20_000);
    expect(calculate("1%(".repeat(99) + "2" + ")".repeat(99))).toBe(1);
    expect(calculate("(".repeat(100) + "1" + ")".repeat(100))).toBe(1);
    expect(() => calculate("(".repeat(101) + "1" + ")".repeat(101))).toThrow("brackets nested more than 100 deep");
    expect(() => calculate("[".repeat(1000))).toThrow("brackets nested more than 100 deep");
    expect(calculate("-".repeat(240) + "1")).toBe(1);
    expect(() => calculate("-".repeat(1999) + "1")).toThrow("expression nested more than 250 levels deep");
    expect(calculate("1+".repeat(999) + "1")).toBe(1000);
    expect(calculate("1%".repeat(999) + "1")).toBe(0);
    expect(() => calculate("2^".repeat(999) + "2")).toThrow("expression nested more than 250 levels deep");
    expect(() => calculate("2^".repeat(200) + "2")).toThrow(/is not finite \(Infinity\)/);
  });

  it("refuses what mathjs read as more than arithmetic: hexadecimal, binary and octal numbers", () => {
    for (const expression of ["0x10", "0b101", "0o17"]) {
      expect(() => calculate(expression)).toThrow(/hexadecimal, binary and octal numbers are not allowed; write the decimal value/);
    }
  });
});
