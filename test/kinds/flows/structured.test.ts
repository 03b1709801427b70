import { describe, expect, it } from "vitest";
import { type Action, formatInstructions, loadSchema, type Plan, parseStructured } from "../../../src/kinds/structured.js";

const plan = loadSchema("plan");
const action = loadSchema("action");

describe("formatInstructions", () => {
  it("is generated from the schema and embeds it", () => {
    const text = formatInstructions(plan);
    expect(text).toContain("Plan");
    expect(text).toContain(String(plan.description));
    const embedded = /```json\n([\s\S]*?)```/.exec(text)?.[1];
    expect(JSON.parse(embedded ?? "")).toMatchObject({ required: ["steps"], properties: { steps: { minItems: 1 } } });
  });
});

describe("parseStructured", () => {
  it("accepts bare JSON", () => {
    expect(parseStructured<Plan>('{"steps": ["a", "b"]}', plan)).toEqual({ ok: true, value: { steps: ["a", "b"] } });
  });

  it("tolerates a fenced block and text around it", () => {
    const text = 'Here is the plan:\n```json\n{"steps": ["look up", "compute"]}\n```\nGood luck!';
    expect(parseStructured<Plan>(text, plan)).toEqual({ ok: true, value: { steps: ["look up", "compute"] } });
  });

  it("tolerates prose around an unfenced object, with braces inside strings", () => {
    const text = 'Sure. {"steps": ["print \\"}\\" then {x}"]} Done.';
    expect(parseStructured<Plan>(text, plan)).toEqual({ ok: true, value: { steps: ['print "}" then {x}'] } });
  });

  it("reports schema violations readably", () => {
    const result = parseStructured<Plan>('{"steps": [], "extra": 1}', plan);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toContain("/steps must NOT have fewer than 1 items");
    expect(result.errors).toContain("must NOT have additional properties ('extra')");
  });

  it("says when there is no JSON at all", () => {
    expect(parseStructured<Plan>("I think we should first compute the area.", plan)).toEqual({
      ok: false,
      errors: "no JSON object found in the answer",
    });
    expect(parseStructured<Plan>('{"steps": ["a"', plan)).toMatchObject({ ok: false, errors: "no JSON object found in the answer" });
  });

  it("tells a Response from a Plan in an Action", () => {
    expect(parseStructured<Action>('{"action": {"response": "42"}}', action)).toEqual({ ok: true, value: { action: { response: "42" } } });
    expect(parseStructured<Action>('{"action": {"steps": ["x"]}}', action)).toEqual({ ok: true, value: { action: { steps: ["x"] } } });
    const both = parseStructured<Action>('{"action": {"response": "42", "steps": ["x"]}}', action);
    expect(both.ok).toBe(false);
    const wrong = parseStructured<Action>('{"steps": ["x"]}', action);
    expect(wrong).toMatchObject({ ok: false });
    if (!wrong.ok) expect(wrong.errors).toContain("must have required property 'action'");
  });

  it("prefers a candidate that validates over an earlier one that only parses", () => {
    const text = 'Example: {"foo": 1}. Real: {"steps": ["a"]}';
    expect(parseStructured<Plan>(text, plan)).toEqual({ ok: true, value: { steps: ["a"] } });
  });
});
