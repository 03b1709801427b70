import { describe, expect, it } from "vitest";
import { calculate, calculatorTool } from "../../src/tools/builtin/calculator.js";
import { terminateTool } from "../../src/tools/builtin/terminate.js";
import { call, makeBox } from "./helpers.js";

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
  ])("%s = %d", (expression, expected) => {
    expect(calculate(expression)).toBe(expected);
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
    ["sqrt(-1)", /does not evaluate to a real number \(got Complex\)/],
    ['"abc"', /only numbers are allowed/],
    ["1 == 1", /operator "==" is not allowed/],
    ["1 < 2 < 3", /comparisons not allowed/],
    ["a.constructor", /property access not allowed/],
    ["5!", /operator "!" is not allowed/],
  ])("refuses %s", (expression, message) => {
    expect(() => calculate(expression)).toThrow(message);
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
