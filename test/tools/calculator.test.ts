/**
 * The calculator (docs/calculator.md): arithmetic on real numbers,
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
    ["1/2/3pi", 0.5235987755983], // ((1/2)/3)·pi: juxtaposition is at the level of * and /, left to right
    ["2pi / 2pi", 9.8696044010894], // ((2·pi)/2)·pi
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
    ["fix(-0.2)", 0],
    ["round(1e300, 2)", 1e300],
    ["max(-1e308, 1e308) - 1e308", 0],
    ["atan2(1, 1) * 4", 3.1415926535898],
    ["100 + 10% - 5", 100], // 10 mod -5: a % followed by an operand is mod
  ])("%j = %d", async (expression, expected) => {
    expect(await calculate(expression)).toBe(expected);
  });

  it.each([
    ['import({"x": 1}, {"override": true})', /^function "import" is not allowed; allowed functions: sqrt, cbrt, /],
    ['evaluate("1")', /^function "evaluate" is not allowed/],
    ['createUnit("parsec2")', /^function "createUnit" is not allowed/],
    ["f(x) = x^2", /^function "f" is not allowed/],
    ["constructor(1)", /^function "constructor" is not allowed/],
    ["pi(2)", /^function "pi" is not allowed/],
    ["sqrt 4", /^function "sqrt" needs its arguments in parentheses, e\.g\. sqrt\(2\)$/],
    ["x = 3", /^unknown symbol "x"; the constants are pi, e and tau$/],
    ["5 cm", /^unknown symbol "cm"/],
    ["e2", /^unknown symbol "e2"/],
    ["sqrt(x)", /^unknown symbol "x"/],
    ["true + 1", /^unknown symbol "true"/],
    ["1 and 2", /^unknown symbol "and"/],
    ["a.constructor", /^unknown symbol "a"/],
    ["__proto__", /^unknown symbol "__proto__"/],
    ["toString", /^unknown symbol "toString"/],
    ["1 / Infinity", /^unknown symbol "Infinity"/],
    ["NaN", /^unknown symbol "NaN"/],
    ["1/0", /^cannot evaluate "1\/0": division by zero$/],
    ["-1/0", /^cannot evaluate "-1\/0": division by zero$/],
    ["0/0", /^cannot evaluate "0\/0": division by zero$/],
    ["1 / (2 - 2)", /division by zero/],
    ["sqrt(-1)", /^cannot evaluate "sqrt\(-1\)": sqrt\(-1\) is not a real number$/],
    ["(-8)^(1/3)", /^cannot evaluate "\(-8\)\^\(1\/3\)": -8 \^ 0\.33333333333333 is not a real number$/],
    ["log(-1)", /: log\(-1\) is not a real number$/],
    ["asin(2)", /: asin\(2\) is not a real number$/],
    ["1e400", /^cannot evaluate "1e400": 1e400 is not finite \(Infinity\)$/],
    ["exp(1000)", /: exp\(1000\) is not finite \(Infinity\)$/],
    ["log(0)", /: log\(0\) is not finite \(-Infinity\)$/],
    ["0^-1", /: 0 \^ -1 is not finite \(Infinity\)$/],
    ["1e308 * 10 / 10", /: 1e\+308 \* 10 is not finite \(Infinity\)$/],
    ["2 +* foo )", /^cannot parse "2 \+\* foo \)": value expected \(char 4\)$/],
    ["(1 + 2", /^cannot parse "\(1 \+ 2": parenthesis \) expected \(char 7\)$/],
    ["(1 + )", /^cannot parse "\(1 \+ \)": value expected \(char 6\)$/],
    ["2 3", /^cannot parse "2 3": unexpected "3" \(char 3\)$/],
    ["max(1,)", /^cannot parse "max\(1,\)": value expected \(char 7\)$/],
    ["  ", /^cannot parse " {2}": the expression is empty$/],
    [`${"1 + ".repeat(100)}+`, /^cannot parse "1 \+ 1 \+ (1 \+ )+1\.\.\.": value expected \(char 402\)$/],
    ["(1 +\n 2) +* 3", /^cannot parse "\(1 \+\\n 2\) \+\* 3": value expected \(char 11\)$/],
    ["[1, 2, 3]", /^cannot parse "\[1, 2, 3\]": unexpected "\[" \(char 1\)$/],
    ["(1)[1]", /unexpected "\[" \(char 4\)$/],
    ["{a: 1}", /unexpected "\{"/],
    ['"abc"', /unexpected "\\""/],
    ["'abc'", /unexpected "'"/],
    ['max("1", 2)', /unexpected "\\"" \(char 5\)$/],
    ["1 == 1", /unexpected "=" \(char 3\)$/],
    ["1 < 2 < 3", /unexpected "<"/],
    ["5!", /unexpected "!"/],
    ["1 & 2", /unexpected "&"/],
    ["2 .* 3", /unexpected "\."/],
    ["1 ? 2 : 3", /unexpected "\?"/],
    ["1:3", /unexpected ":"/],
    ["1; 2", /^cannot parse "1; 2": several expressions not allowed \(char 2\)$/],
    ["1\n2", /^cannot parse "1\\n2": several expressions not allowed \(char 2\)$/],
    ["max()", /^function max takes 1 or more arguments, not 0$/],
    ["sqrt(1, 2)", /^function sqrt takes 1 argument, not 2$/],
    ["round()", /^function round takes 1 or 2 arguments, not 0$/],
    ["atan2(1)", /^function atan2 takes 2 arguments, not 1$/],
    ["round(1, 16)", /^decimals in function round must be an integer from 0 to 15$/],
    ["floor(1, 0.5)", /^decimals in function floor must be an integer from 0 to 15$/],
    ["1,000 + 5", /; write numbers without thousands separators$/],
    ["2**3", /^cannot parse "2\*\*3": value expected \(char 3\); write powers with \^$/],
    ["2 × 3", /^cannot parse "2 × 3": unexpected "×" \(char 3\); write \* for ×$/],
    ["2 x 3", /^unknown symbol "x"; the constants are pi, e and tau; write \* for x$/],
    ["x²", /; write \^2 or \^3 for ² and ³$/],
    ["π * 2", /; write pi for π$/],
  ])("refuses %j", async (expression, message) => {
    const refusal = calculate(expression);
    await expect(refusal).rejects.toThrow(message);
    await expect(refusal).rejects.toMatchObject({ code: "TOOL_FAILED" });
  });

  it("evaluates in one pass, so nesting costs linear time, and refuses nesting past 100 levels before the stack runs out", async () => {
    // mathjs parsed each `%` both as a percentage and as mod: at 40 levels this took days.
    expect(await calculate(`${"1%(".repeat(49)}2${")".repeat(49)}`)).toBe(1); // 1 mod (1 mod (… (1 mod 2)))
    expect(await calculate(`${"1%sqrt(".repeat(49)}2${")".repeat(49)}`)).toBe(1);
    expect(await calculate(`${"1 mod (".repeat(24)}2${")".repeat(24)}`)).toBe(0);
    expect(await calculate(`${"(".repeat(100)}1${")".repeat(100)}`)).toBe(1);
    expect(await calculate(`${"-".repeat(100)}1`)).toBe(1);
    for (const deep of [`${"(".repeat(101)}1${")".repeat(101)}`, `${"-".repeat(1999)}1`, `${"2^".repeat(200)}2`, `${"sqrt(".repeat(101)}1${")".repeat(101)}`]) {
      await expect(calculate(deep), deep).rejects.toThrow(/: nested more than 100 deep \(char \d+\)$/);
    }
    await expect(calculate("[".repeat(1000))).rejects.toThrow('unexpected "["');
    expect(await calculate(`${"1+".repeat(999)}1`)).toBe(1000);
    expect(await calculate(`${"1%".repeat(999)}1`)).toBe(0);
    await expect(calculate(`${"2^".repeat(20)}2`)).rejects.toThrow(/is not finite \(Infinity\)$/);
  });

  it("answers through the ToolBox as {expression, result}, and errors for the model to repair", async () => {
    const { box } = makeBox([calculatorTool()]);
    const [area, bad] = await box.run([call("calculator", { expression: "round(pi*5^2, 2)" }, "1"), call("calculator", { expression: 'evaluate("1")' }, "2")]);
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
