import { describe, expect, it } from "vitest";
import {
  CONTINUE,
  NOTED,
  layOut,
  layoutFromRefusal,
  normaliseToolCalls,
  splitThink,
  ThinkFilter,
  toolCallsInContent,
  usageOf,
} from "../../src/models/dialect.js";
import type { ChatMessage } from "../../src/models/types.js";

describe("reasoning in the content", () => {
  it("splits a leading <think> block, a lone </think>, and an unclosed <think>", () => {
    expect(splitThink('<think>\nradius 5, so 78.5\n</think>\n\n{"action": 1}')).toEqual({ content: '{"action": 1}', reasoning: "radius 5, so 78.5" });
    expect(splitThink('the template opened it</think>{"a":1}')).toEqual({ content: '{"a":1}', reasoning: "the template opened it" });
    expect(splitThink("<think>still thinking when the tokens ran out")).toEqual({ content: "", reasoning: "still thinking when the tokens ran out" });
    expect(splitThink("<think></think>answer")).toEqual({ content: "answer" });
    expect(splitThink("no reasoning here")).toEqual({ content: "no reasoning here" });
    expect(splitThink(null)).toEqual({ content: null });
    // A think tag quoted in the middle of an answer is the answer's text.
    expect(splitThink("use <think> tags like <think>x</think>")).toEqual({ content: "use <think> tags like <think>x</think>" });
  });

  it("keeps streamed thinking out of the deltas, however the tags are split", () => {
    const f = new ThinkFilter();
    const shown = ["<th", "ink>", "hmm, 2+2", " is 4</th", "ink>\n\n", '{"ans', 'wer":4}'].map((d) => f.push(d)).join("");
    expect(shown).toBe('{"answer":4}');
    const plain = new ThinkFilter();
    expect(["Hel", "lo"].map((d) => plain.push(d)).join("")).toBe("Hello");
  });
});

describe("strict chat templates", () => {
  const react: ChatMessage[] = [
    { role: "user", content: "Q" },
    { role: "system", content: "S" },
    { role: "assistant", content: "r1" },
    { role: "assistant", content: "r2" },
  ];

  it("recognises the refusals of strict templates", () => {
    expect(layoutFromRefusal("400 Conversation roles must alternate user/assistant/user/assistant/...")).toBe("alternate");
    expect(layoutFromRefusal("400 System role not supported")).toBe("no_system");
    expect(layoutFromRefusal("400 Invalid model")).toBeUndefined();
  });

  it("lays a react request out as one system message, then alternating turns ending with the user", () => {
    expect(layOut(react, "alternate")).toEqual([
      { role: "system", content: "S" },
      { role: "user", content: "Q" },
      { role: "assistant", content: "r1" },
      { role: "user", content: CONTINUE },
      { role: "assistant", content: "r2" },
      { role: "user", content: CONTINUE },
    ]);
    expect(layOut(react, "no_system")[0]).toEqual({ role: "user", content: "S\n\nQ" });
    expect(layOut(react, "no_system").some((m) => m.role === "system")).toBe(false);
    expect(layOut(react, "as_is")).toEqual(react);
  });

  it("puts an assistant turn between tool results and a user turn", () => {
    const after: ChatMessage[] = [
      { role: "user", content: "Q" },
      { role: "assistant", content: null, tool_calls: [{ id: "a", name: "calc", arguments: "{}" }] },
      { role: "tool", tool_call_id: "a", content: "4" },
      { role: "user", content: "reminder" },
    ];
    expect(layOut(after, "alternate").map((m) => `${m.role}:${m.content ?? ""}`)).toEqual([
      "user:Q",
      "assistant:",
      "tool:4",
      `assistant:${NOTED}`,
      "user:reminder",
    ]);
  });

  it("leaves tool turns where they are and joins user texts in a row", () => {
    const transcript: ChatMessage[] = [
      { role: "system", content: "S1" },
      { role: "user", content: "Q" },
      { role: "user", content: "more" },
      { role: "assistant", content: null, tool_calls: [{ id: "a", name: "calc", arguments: "{}" }] },
      { role: "tool", tool_call_id: "a", content: "4" },
      { role: "system", content: "S2" },
      { role: "assistant", content: "done" },
    ];
    expect(layOut(transcript, "alternate")).toEqual([
      { role: "system", content: "S1\n\nS2" },
      { role: "user", content: "Q\n\nmore" },
      transcript[3],
      transcript[4],
      { role: "assistant", content: "done" },
      { role: "user", content: CONTINUE },
    ]);
  });
});

describe("tool calls as servers send them", () => {
  it("gives every call a unique id and string arguments", () => {
    const calls = normaliseToolCalls([
      { name: "a", arguments: { x: 1 } },
      { id: "", name: "b", arguments: '{"y":2}' },
      { id: "call_0", name: "c" },
      { id: "call_0", name: "d", arguments: null },
      { id: "call_2", name: "e", arguments: "{}" },
    ]);
    expect(calls.map((c) => c.arguments)).toEqual(['{"x":1}', '{"y":2}', "{}", "{}", "{}"]);
    const ids = calls.map((c) => c.id);
    expect(new Set(ids).size).toBe(5);
    expect(ids.every((id) => id.length > 0)).toBe(true);
    expect(ids[2]).toBe("call_0");
    expect(ids[4]).toBe("call_2");
  });

  it("reads Hermes-style <tool_call> blocks out of the content", () => {
    const found = toolCallsInContent('Let me compute.\n<tool_call>\n{"name": "calculator", "arguments": {"expression": "2+2"}}\n</tool_call>');
    expect(found).toEqual({ content: "Let me compute.", calls: [{ name: "calculator", arguments: { expression: "2+2" } }] });
    expect(toolCallsInContent("<tool_call>not json</tool_call>").calls).toEqual([]);
    expect(toolCallsInContent("plain").content).toBe("plain");
  });
});

describe("usage", () => {
  it("marks missing or partial usage as unknown instead of reading 0", () => {
    expect(usageOf({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 })).toEqual({ prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 });
    expect(usageOf(undefined)).toEqual({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, unknown: 1 });
    expect(usageOf({ prompt_tokens: 3 })).toEqual({ prompt_tokens: 3, completion_tokens: 0, total_tokens: 3, unknown: 1 });
  });
});
