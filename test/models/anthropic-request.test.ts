/** The Messages API body of a request (src/models/anthropic-request.ts): turns, tool results, thinking carried back, cache breakpoints. */
import { describe, expect, it } from "vitest";
import { anthropicBody } from "../../src/models/anthropic-request.js";
import type { ChatMessage } from "../../src/models/types.js";
import { OPENAI_MODEL_DEFAULTS } from "../support/team.js";

const config = {
  name: "c",
  provider: "anthropic",
  model: "claude-test",
  timeout_ms: 1000,
  max_retries: 0,
  stream: false,
  ...OPENAI_MODEL_DEFAULTS,
  cache: true,
} as const;
const tools = [{ name: "calculator", description: "adds", parameters: { type: "object" } }];
const EPHEMERAL = { type: "ephemeral" };
const marks = (value: unknown) => JSON.stringify(value).split('"cache_control"').length - 1;

const thinking = { type: "thinking", thinking: "hmm", signature: "sig" };
const conversation: ChatMessage[] = [
  { role: "system", content: "You are a solver." },
  { role: "user", content: "1 + 1?" },
  {
    role: "assistant",
    content: null,
    tool_calls: [{ id: "c1", name: "calculator", arguments: '{"expression":"1+1"}' }],
    reasoning_items: [{ type: "reasoning", anthropic: thinking }],
  },
  { role: "tool", tool_call_id: "c1", content: "2" },
  { role: "assistant", content: null, tool_calls: [{ id: "c2", name: "calculator", arguments: '{"expression":"2+1"}' }] },
  { role: "tool", tool_call_id: "c2", content: "3" },
];

describe("anthropicBody", () => {
  it("system apart, tool_use and tool_result blocks, thinking first on its reply, max_tokens always sent", () => {
    const body = anthropicBody({ ...config, cache: false }, { messages: conversation, tools });
    expect(body.system).toEqual([{ type: "text", text: "You are a solver." }]);
    expect(body.max_tokens).toBe(4096);
    expect(body.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant", "user"]);
    expect(body.messages[1]?.content).toEqual([thinking, { type: "tool_use", id: "c1", name: "calculator", input: { expression: "1+1" } }]);
    expect(body.messages[2]?.content).toEqual([{ type: "tool_result", tool_use_id: "c1", content: "2" }]);
    expect(marks(body)).toBe(0);
  });

  it("cache on, the system as before: breakpoints on the last tool, the system and the message before the newest turn", () => {
    const body = anthropicBody(config, { messages: conversation, tools }, "You are a solver.");
    expect(body.tools?.[0]).toMatchObject({ cache_control: EPHEMERAL });
    expect(body.system).toEqual([{ type: "text", text: "You are a solver.", cache_control: EPHEMERAL }]);
    expect(((body.messages[3]?.content ?? []) as object[]).at(-1)).toMatchObject({ type: "tool_use", cache_control: EPHEMERAL });
    expect(marks(body)).toBe(3);
  });

  it("after a compaction, the summary is a breakpoint too (four at most)", () => {
    const summary: ChatMessage = { role: "assistant", content: "Summary of the earlier part of this work (4 messages):\nadded twice" };
    const messages: ChatMessage[] = [conversation[0]!, conversation[1]!, summary, ...conversation.slice(4)];
    const body = anthropicBody(config, { messages, tools }, "You are a solver.");
    expect(body.messages[1]?.content).toEqual([{ type: "text", text: summary.content, cache_control: EPHEMERAL }]);
    expect(marks(body)).toBe(4);
  });

  it("a system prompt whose tail changes: its head cached apart, the conversation behind it not marked", () => {
    const system = "You are a solver.\n\n## Current state\nRecursion 2";
    const body = anthropicBody(
      config,
      { messages: [{ role: "system", content: system }, ...conversation.slice(1)], tools },
      "You are a solver.\n\n## Current state\nRecursion 1",
    );
    expect(body.system).toEqual([
      { type: "text", text: "You are a solver.\n\n", cache_control: EPHEMERAL },
      { type: "text", text: "## Current state\nRecursion 2" },
    ]);
    expect(marks(body.messages)).toBe(0);
  });
});
