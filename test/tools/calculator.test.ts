/**
 * The calculator (docs/calculator.md): mathjs's arithmetic on real numbers,
 * everything else refused with a message the model can act on.
 */
import { describe, expect, it } from "vitest";
import { calculate, calculatorTool } from "../../src/tools/builtin/calculator.js";
import { terminateTool } from "../../src/tools/builtin/terminate.js";
import { call, makeBox } from "../support/tools.js";

describe("calculator", () => {
  it.each([
    ["round(pi*5^2, 2)", 78.54],
    ["round(2*pi*5, 2)", 31.42],
    ["2^10", 1024],
    ["10 % 3", 1],
    ["sqrt(16)", 4],
    ["0.1 + 0.2", 0.3],
    ["max(3, 7, 2) - min(4, -1)", 8],
    ["log(e) + log10(1000) + abs(-2)", 6],
    ["floor(2.7) + ceil(2.1) + pow(2, 3)", 13],
    ["cos(pi) + exp(0)", 0],
    ["2pi / (2 * PI)", 1],
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
  ])("%j = %d", async (expression, expected) => {
    expect(await calculate(expression)).toBe(expected);
  });

  it.each([
    ['import({"x": 1}, {"override": true})', /function "import" is not allowed/],
    ['evaluate("1")', /function "evaluate" is not allowed/],
    ['createUnit("parsec2")', /function "createUnit" is not allowed/],
    ['parse("1+1")', /function "parse" is not allowed/],
    ['simplify("x+x")', /function "simplify" is not allowed/],
    ["1/0", /is not finite \(Infinity\)/],
    ["-1/0", /is not finite \(-Infinity\)/],
    ["0/0", /is not finite \(NaN\)/],
    ["2 +* foo )", /cannot parse "2 \+\* foo \)"/],
    ["x = 3", /assignments not allowed/],
    ["f(x) = x^2", /function definitions not allowed/],
    ["[1, 2, 3]", /matrices not allowed/],
    ["5 cm", /unknown symbol "cm"/],
    ["sqrt(-1)", /^"sqrt\(-1\)" does not evaluate to a real number \(got Complex\)$/],
    ["(-8)^(1/3)", /does not evaluate to a real number \(got Complex\)/],
    ["log(-1)", /got Complex/],
    ["asin(2)", /got Complex/],
    ['"abc"', /only numbers are allowed/],
    ["'abc'", /only numbers are allowed, not "abc"/],
    ['max("1", 2)', /only numbers are allowed/],
    ["true + 1", /only numbers are allowed, not true/],
    ["1 == 1", /operator "==" is not allowed/],
    ["1 < 2 < 3", /comparisons not allowed/],
    ["a.constructor", /property access not allowed/],
    ["(1)[1]", /property access not allowed/],
    ["{a: 1}", /objects not allowed/],
    ["5!", /operator "!" is not allowed/],
    ["1 & 2", /operator "&" is not allowed/],
    ["1 and 2", /operator "and" is not allowed/],
    ["2 .* 3", /operator ".\*" is not allowed/],
    ["1; 2", /several expressions not allowed/],
    ["1\n2", /several expressions not allowed/],
    ["1 ? 2 : 3", /conditionals not allowed/],
    ["1:3", /ranges not allowed/],
    ["1e400", /is not finite \(Infinity\)/],
    ["NaN", /is not finite \(NaN\)/],
    ["(1 + 2", /^cannot parse "\(1 \+ 2": Parenthesis \) expected/],
    ["2 3", /^cannot parse "2 3": Unexpected part "3"/],
    ["  ", /^cannot parse "  ": the expression is empty/],
    ["1 + ".repeat(100) + "+", /^cannot parse "1 \+ 1 \+ (1 \+ )+1\.\.\.": /],
    ["(1 +\n 2) +* 3", /^cannot parse "\(1 \+\\n 2\) \+\* 3": Value expected/],
    ["max()", /Too few arguments in function max/],
    ["sqrt(1, 2)", /Too many arguments in function sqrt/],
    ["round(1, 16)", /decimals in function round must be an integer from 0 to 15/],
    ["1,000 + 5", /; write numbers without thousands separators$/],
    ["2**3", /; write powers with \^$/],
    ["2 × 3", /; write \* for ×$/],
    ["sqrt 4", /function "sqrt" needs its arguments in parentheses/],
    ["e2", /unknown symbol "e2"/],
    ["pi(2)", /function "pi" is not allowed/],
    ["sqrt(x)", /unknown symbol "x"/],
    ["__proto__", /unknown symbol "__proto__"/],
    ["constructor(1)", /function "constructor" is not allowed/],
    ["toString", /unknown symbol "toString"/],
  ])("refuses %j", async (expression, message) => {
    await expect(calculate(expression)).rejects.toThrow(message);
  });

  it("refuses what would make the parser take exponential time or exhaust the stack, and computes just within", async () => {
    // Each `%` is parsed as a percentage and again as mod: past 8 levels the time doubles a level.
    expect(await calculate("1%(".repeat(8) + "2" + ")".repeat(8))).toBe(0); // 1 mod (1 mod (… (1 mod 2)))
    for (const [open, close] of [["1%(", ")"], ["1%-(", ")"], ["1%sqrt(", ")"], ["(1 + 2%", ")"]] as const) {
      const expression = open.repeat(24) + "2" + close.repeat(24);
      await expect(calculate(expression), expression).rejects.toThrow("a % inside brackets after a % nests more than 8 deep; write mod instead");
    }
    expect(await calculate("1 mod (".repeat(24) + "2" + ")".repeat(24))).toBe(0);
    expect(await calculate("(".repeat(100) + "1" + ")".repeat(100))).toBe(1);
    await expect(calculate("(".repeat(101) + "1" + ")".repeat(101))).rejects.toThrow("brackets nested more than 100 deep");
    await expect(calculate("[".repeat(1000))).rejects.toThrow("brackets nested more than 100 deep");
    await expect(calculate("-".repeat(1999) + "1")).rejects.toThrow(/nested too deep|not finite/);
    expect(await calculate("1+".repeat(999) + "1")).toBe(1000);
    expect(await calculate("1%".repeat(999) + "1")).toBe(0);
    await expect(calculate("2^".repeat(200) + "2")).rejects.toThrow(/is not finite \(Infinity\)/);
  });

  it("answers through the ToolBox as {expression, result}, and errors for the model to repair", async () => {
    const { box } = makeBox([calculatorTool()]);
    const [area, bad] = await box.run([
      call("calculator", { expression: "round(pi*5^2, 2)" }, "1"),
      call("calculator", { expression: 'evaluate("1")' }, "2"),
    ]);
    expect(area).toMatchObject({ ok: true, result: { expression: "round(pi*5^2, 2)", result: 78.54 } });
    expect(bad!.ok).toBe(false);
    expect(bad!.error).toMatch(/^function "evaluate" is not allowed; allowed functions: sqrt/);
  });
});

describe("calculator and terminate", () => {
  it("share one schema object per tool, and terminate answers with its status", async () => {
    // Fresh instances share one schema object, so ajv compiles it once.
    expect(calculatorTool().parameters).toBe(calculatorTool().parameters);
    const { box } = makeBox([terminateTool()]);
    const [done, failed, invalid] = await box.run([
      call("terminate", { answer: "area 78.54" }),
      call("terminate", { answer: "gave up", status: "failure" }),
      call("terminate", { answer: "x", status: "maybe" }),
    ]);
    expect(done).toMatchObject({ ok: true, result: { answer: "area 78.54", status: "success" } });
    expect(failed).toMatchObject({ ok: true, result: { answer: "gave up", status: "failure" } });
    expect(invalid!.error).toContain('/status must be equal to one of the allowed values ("success", "failure")');
  });
});
