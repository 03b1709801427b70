/**
 * What each caller of the shared tolerant parser forgives, and the errors the
 * model is sent back: pinned here because each chooses its own options.
 */
import { describe, expect, it } from "vitest";
import { parseReply } from "../../src/kinds/react/protocol.js";
import { loadSchema, type Plan, parseStructured } from "../../src/kinds/structured.js";
import { parseToolArguments } from "../../src/tools/validate-args.js";

const answer = '{"observe": "o", "thought": "t", "action": {"result": {"action_type": "ANSWER", "output": {"answer": "42"}}}}';

function parseError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${text} parses`);
}

describe("react's parseReply", () => {
  it("takes the protocol object bare, fenced, with prose around it or a stray closing brace", () => {
    const ok = { action_type: "ANSWER", observe: "o", thought: "t", answer: "42" };
    expect(parseReply(answer, [])).toEqual(ok);
    expect(parseReply(`Here:\n\`\`\`json\n${answer}\n\`\`\``, [])).toEqual(ok);
    expect(parseReply(`I will answer. ${answer} Hope that helps {:}`, [])).toEqual(ok);
    expect(parseReply(`${answer}}`, [])).toEqual(ok);
  });

  it("treats prose, even with braces in it, as the answer", () => {
    expect(parseReply("The set is {1, 2}.", [])).toEqual({ action_type: "ANSWER", observe: "", thought: "", answer: "The set is {1, 2}." });
  });

  it("sends back the parse error of the object attempted, not of the prose around it", () => {
    const truncated = answer.slice(0, -1);
    expect(parseReply(truncated, [])).toMatchObject({
      action_type: "INVALID",
      error: `the reply is not valid JSON (${parseError(truncated)})`,
    });
    const inProse = `Sure: ${truncated}`;
    expect(parseReply(inProse, [])).toMatchObject({
      action_type: "INVALID",
      error: `the reply is not valid JSON (${parseError(truncated)})`,
    });
  });

  it('counts a fence or an "action" key as attempted JSON', () => {
    expect(parseReply("```json\n```", [])).toMatchObject({
      action_type: "INVALID",
      error: "the reply is not valid JSON (not an object)",
    });
    expect(parseReply('"action": "ANSWER"', [])).toMatchObject({
      action_type: "INVALID",
      error: "the reply is not valid JSON (not an object)",
    });
    expect(parseReply("```json\n[1, 2]\n```", [])).toMatchObject({
      action_type: "INVALID",
      error: "the reply is not valid JSON (not an object)",
    });
  });
});

describe("structured's parseStructured", () => {
  const plan = loadSchema("plan");

  it("reports the schema errors of the first candidate that parsed", () => {
    const result = parseStructured<Plan>('{"steps": [1] ,} {"steps": []} {"foo": 1}', plan);
    expect(result).toMatchObject({ ok: false, errors: expect.stringContaining("/steps must NOT have fewer than 1 items") });
    if (!result.ok) expect(result.errors).not.toContain("foo");
  });

  it("does not repair trailing commas", () => {
    expect(parseStructured<Plan>('{"steps": ["a",]}', plan)).toEqual({ ok: false, errors: "no JSON object found in the answer" });
  });

  it("looks for objects from the first 32 braces only", () => {
    const noise = "{x} ".repeat(32);
    expect(parseStructured<Plan>(`${noise}{"steps": ["a"]}`, plan)).toMatchObject({ ok: false });
    expect(parseStructured<Plan>(`${"{x} ".repeat(31)}{"steps": ["a"]}`, plan)).toEqual({ ok: true, value: { steps: ["a"] } });
  });
});

describe("tools' parseToolArguments", () => {
  it("forgives an empty string, a wrapping fence and trailing commas", () => {
    expect(parseToolArguments("  ")).toEqual({ ok: true, value: {} });
    expect(parseToolArguments('```JSON\n{"a": 1}\n```')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseToolArguments('{"a": [1,],}')).toEqual({ ok: true, value: { a: [1] } });
    expect(parseToolArguments('```json\n{"a": "x, }",}\n```')).toEqual({ ok: true, value: { a: "x, }" } });
  });

  it("takes nothing out of prose, and accepts only an object", () => {
    const raw = 'Here: {"a": 1}';
    expect(parseToolArguments(raw)).toEqual({ ok: false, error: `arguments are not valid JSON (${parseError(raw)}): ${raw}` });
    expect(parseToolArguments("[1, 2]")).toEqual({ ok: false, error: "arguments must be a JSON object, got an array: [1, 2]" });
    expect(parseToolArguments('```json\n"x"\n```')).toMatchObject({ error: expect.stringContaining("got a string") });
  });

  it("quotes one line of the parse error", () => {
    const raw = 'nope\n{"a": 1}';
    const result = parseToolArguments(raw);
    expect(result).toEqual({ ok: false, error: `arguments are not valid JSON (${parseError(raw).split("\n")[0]}): ${raw}` });
  });
});
