/**
 * The answer as it is written (src/kinds/answer-text.ts): which deltas are
 * the entry agent's answer, and what is given when the run ends.
 */
import { describe, expect, it } from "vitest";
import type { ResolvedTeam } from "../../src/config/types.js";
import type { RunEvent, RunEventBody } from "../../src/events/types.js";
import { AnswerText } from "../../src/kinds/answer-text.js";
import { partialAnswer } from "../../src/kinds/react/protocol.js";
import { reactReply } from "../support/team.js";

/** A team whose agent "a" has no guardrails; "g" has an output guardrail. */
const TEAM = {
  agents: { a: { guardrails: undefined }, g: { guardrails: [{ on: "output" }] } },
} as unknown as ResolvedTeam;

let seq = 0;
const ev = (body: RunEventBody, step_id = "s1", parent_step_id?: string, agent_id = "a"): RunEvent =>
  ({ seq: ++seq, ts: "", task_id: "t", agent_id, step_id, ...(parent_step_id ? { parent_step_id } : {}), ...body }) as RunEvent;

/** Feeds `reply` to `text` in pieces of `size`, as llm.delta events of `step`; what was given. */
async function stream(text: AnswerText, reply: string, step = "s1", size = 5): Promise<string[]> {
  const given: string[] = [];
  await text.feed(ev({ type: "llm.request", model: "m", messages: 1 }, step));
  for (let i = 0; i < reply.length; i += size) {
    const piece = await text.feed(ev({ type: "llm.delta", text: reply.slice(i, i + size) }, step));
    if (piece) given.push(piece);
  }
  return given;
}

async function started(kind = "react"): Promise<AnswerText> {
  const text = new AnswerText(TEAM);
  await text.feed(ev({ type: "agent.started", kind, input: "q" }));
  return text;
}

describe("partialAnswer (react)", () => {
  it("reads output.answer of an ANSWER reply as far as it goes, fenced or not; nothing else", () => {
    const reply = reactReply("ANSWER", { answer: 'It is "4".' });
    expect(partialAnswer(reply.slice(0, reply.indexOf("4")))).toBe('It is "');
    expect(partialAnswer(reply)).toBe('It is "4".');
    expect(partialAnswer(`\`\`\`json\n${reply}`)).toBe('It is "4".');
    expect(partialAnswer(reactReply("CALL_TOOL", {}))).toBeUndefined();
    expect(partialAnswer(reactReply("ANSWER", { answer: 4 }))).toBeUndefined();
    expect(partialAnswer("It is 4.")).toBeUndefined();
    expect(partialAnswer('{"observe": "x", "thou')).toBeUndefined();
  });
});

describe("AnswerText", () => {
  it("gives the entry agent's react answer in pieces, in order, and nothing more at the end", async () => {
    const text = await started();
    const answer = "A circle of radius 5 m has an area of 78.54 m².";
    const given = await stream(text, reactReply("ANSWER", { answer }, "seen", "done"));
    expect(given.length).toBeGreaterThan(3);
    expect(given.join("")).toBe(answer);
    expect(text.rest(answer)).toBe("");
  });

  it("gives nothing of a tool-calling reply, prose, or an agent called as a tool; the whole answer at the end", async () => {
    const text = await started();
    expect(await stream(text, reactReply("CALL_TOOL", {}))).toEqual([]);
    await text.feed(ev({ type: "agent.started", kind: "react", input: "sub" }, "s2", "s1"));
    expect(await stream(text, reactReply("ANSWER", { answer: "the helper's answer" }), "s2")).toEqual([]);
    expect(await stream(text, "Prose that may still turn out to call a tool.")).toEqual([]);
    expect(text.rest("The answer.")).toBe("The answer.");
  });

  it("gives nothing of an agent with output guardrails: its answer comes whole once they passed it", async () => {
    const text = new AnswerText(TEAM);
    await text.feed(ev({ type: "agent.started", kind: "react", input: "q" }, "s1", undefined, "g"));
    expect(await stream(text, reactReply("ANSWER", { answer: "checked first" }))).toEqual([]);
    expect(text.rest("checked first")).toBe("checked first");
  });

  it("gives nothing for a kind whose answer is not one reply", async () => {
    const text = await started("plan_and_solve");
    expect(await stream(text, reactReply("ANSWER", { answer: "composed later" }))).toEqual([]);
  });

  it("reads a long answer delta by delta, escapes cut between deltas and all, without reading the reply again", async () => {
    const answer = `${'Line "one" \\ é\u2028\n\t'.repeat(2000)}end.`;
    // One model escapes é as \u00e9, which JSON.stringify does not.
    const reply = reactReply("ANSWER", { answer }).replace(/é/g, "\\u00e9");
    for (const size of [1, 3, 7]) {
      const text = await started();
      let parses = 0;
      const reader = text as unknown as { read: (r: string) => string | undefined };
      const read = reader.read;
      reader.read = (r) => {
        parses++;
        return read(r);
      };
      const given = await stream(text, reply, "s1", size);
      expect(given.join("")).toBe(answer);
      // Read whole until the answer's string is found, after each \u00e9 (escaped otherwise than JSON.stringify does), and at its end.
      expect(parses).toBeLessThan(2000 * 3 + 100);
      expect(parses).toBeLessThan(reply.length / size / 4);
    }
  });

  it("goes on across a second reply that repeats the first; after one that differs, the answer follows whole", async () => {
    const text = await started();
    const answer = "The area is 78.54 m² and the circumference 31.42 m.";
    const full = reactReply("ANSWER", { answer });
    const cut = await stream(text, full.slice(0, full.indexOf("78.54")));
    // (Once the answer's string is read on delta by delta, a blank at the end of what has come is given at once.)
    expect(cut.join("")).toBe("The area is ");
    // The model is asked again and writes the same answer: only what is new is given.
    expect((await stream(text, full)).join("")).toBe("78.54 m² and the circumference 31.42 m.");
    expect(text.rest(answer)).toBe("");

    const other = await started();
    await stream(other, full.slice(0, full.indexOf("78.54")));
    expect(await stream(other, reactReply("ANSWER", { answer: "Something else entirely." }))).toEqual([]);
    expect(other.rest("Something else entirely.")).toBe("\n\nSomething else entirely.");
  });
});
