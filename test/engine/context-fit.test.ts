/**
 * The request layout compaction keeps (docs/context.md), on plan_and_solve's
 * transcript (system, user, then assistant messages with tool calls each
 * followed by its tool messages): the head stays, the summary comes next,
 * and no tool message is parted from the assistant message that called it.
 * Pure logic, tested directly; the react run end to end is
 * test/engine/context-compaction.test.ts.
 */
import { describe, expect, it } from "vitest";
import { ContextFit, type SummaryInput } from "../../src/engine/context-fit.js";
import type { ChatMessage } from "../../src/models/types.js";
import { ZERO_USAGE } from "../../src/events/types.js";

const WINDOW = { model: "default", tokens: 4000, compact_at: 0.8 };
const page = (n: number) => Array.from({ length: 700 }, (_, i) => `word${(i * 7 + n) % 97}`).join(" ");

/** A plan_and_solve transcript of `rounds` tool rounds; message objects kept across calls, as Memory keeps them. */
function transcript(rounds: number, kept: ChatMessage[] = []): ChatMessage[] {
  if (kept.length === 0) kept.push({ role: "system", content: "You solve tasks with tools." }, { role: "user", content: "Read the pages." });
  for (let n = (kept.length - 2) / 2 + 1; n <= rounds; n++) {
    kept.push({ role: "assistant", content: null, tool_calls: [{ id: `c${n}`, name: "read_page", arguments: `{"n":${n}}` }] });
    kept.push({ role: "tool", tool_call_id: `c${n}`, content: page(n) });
  }
  return kept;
}

/** Every tool message answers a call of the assistant message before its run of tool messages. */
function wellFormed(messages: readonly ChatMessage[]): boolean {
  let calls = new Set<string>();
  for (const m of messages) {
    if (m.role === "assistant") calls = new Set((m.tool_calls ?? []).map((c) => c.id));
    else if (m.role === "tool" && !calls.has(m.tool_call_id)) return false;
    else if (m.role !== "tool") calls = new Set();
  }
  return true;
}

describe("ContextFit on a plan_and_solve transcript", () => {
  it("sends a request under the threshold as it is", async () => {
    const fit = new ContextFit();
    const messages = transcript(1);
    const fitted = await fit.fit(messages, undefined, WINDOW, async () => expect.fail("no summary is needed"));
    expect(fitted.messages).toEqual(messages);
    expect(fitted.compacted).toBeUndefined();
  });

  it("trims, then summarises the older rounds once, keeping the head, the summary, then whole recent rounds", async () => {
    const fit = new ContextFit();
    const asked: SummaryInput[] = [];
    const summarise = async (input: SummaryInput) => {
      asked.push(input);
      return `summary ${asked.length}`;
    };
    const kept: ChatMessage[] = [];
    let first: { summary: ChatMessage | undefined; at: number } | undefined;
    for (let rounds = 1; rounds <= 12; rounds++) {
      const fitted = await fit.fit(transcript(rounds, kept), undefined, WINDOW, summarise);
      expect(fitted.counted).toBeLessThanOrEqual(WINDOW.tokens);
      expect(wellFormed(fitted.messages)).toBe(true);
      expect(fitted.messages.slice(0, 2)).toEqual(kept.slice(0, 2));
      const third = fitted.messages[2];
      if (asked.length > 0) {
        expect(third?.role).toBe("assistant");
        expect(third?.content).toMatch(/^Summary of the earlier part of this work \(\d+ messages\):\nsummary \d+$/);
        first ??= { summary: third, at: rounds };
      }
      // The last round is sent whole: it is what the model answers now.
      expect(fitted.messages.at(-1)).toBe(kept.at(-1));
    }
    expect(first).toBeDefined();
    // Not once per request: each summary folds in the one before.
    expect(asked.length).toBeLessThan(12 - first!.at);
    for (const input of asked.slice(1)) expect(input.summary).toMatch(/^summary \d+$/);
    for (const input of asked) expect(input.messages.some((m) => m.role === "system" || m.role === "user")).toBe(false);
  });

  it("a server that counts twice the tokens makes it compact earlier", async () => {
    const rounds = async (ratio: number) => {
      const fit = new ContextFit();
      const kept: ChatMessage[] = [];
      for (let n = 1; n <= 12; n++) {
        const fitted = await fit.fit(transcript(n, kept), undefined, WINDOW, async () => "s");
        if (fitted.compacted) return n;
        fit.observe("default", fitted.counted, { ...ZERO_USAGE, prompt_tokens: Math.round(fitted.counted * ratio) });
      }
      return 13;
    };
    expect(await rounds(2)).toBeLessThan(await rounds(1));
  });
});
