/**
 * What `deny` and `pii` match on (src/guardrails/fold.ts, matches.ts) and
 * the masked copy of a step's streamed reply (src/guardrails/event-mask.ts),
 * as pure logic: every look-alike spelling of issue 47 is found and masked
 * where it is written, the plain controls still are, and a match split
 * across deltas never shows.
 */
import { describe, expect, it } from "vitest";
import type { Guardrail } from "../../src/config/types.js";
import { EventMask, HOLD } from "../../src/guardrails/event-mask.js";
import { fold } from "../../src/guardrails/fold.js";
import { findDenied, findMatches, MASK, maskAll, type SpanCheck } from "../../src/guardrails/matches.js";
import { DENIED_PATTERN, INJECTION, INJECTION_PATTERN, INPUT_VARIANTS, OUTPUT_CONTROLS, OUTPUT_VARIANTS } from "../support/look-alikes.js";

const PII: SpanCheck = { kind: "pii", types: ["email", "phone", "credit_card", "iban"] };
const DENY: SpanCheck = { kind: "deny", patterns: [DENIED_PATTERN] };
const OUTPUT = [PII, DENY];

describe("deny on folded text", () => {
  it.each(Object.entries(INPUT_VARIANTS))("finds the injection written with %s, and masks it where it is written", (_, variant) => {
    const text = `Please ${variant}, then go on.`;
    const { spans, matched } = findDenied(text, [INJECTION_PATTERN]);
    expect(matched).toEqual([INJECTION_PATTERN]);
    expect(maskAll(text, [{ kind: "deny", patterns: [INJECTION_PATTERN] }])).toBe(`Please ${MASK}, then go on.`);
    expect(spans.length).toBeGreaterThan(0);
  });

  it("still finds the plain text, and a pattern in another script still matches the text as written", () => {
    expect(findDenied(`Please ${INJECTION}.`, [INJECTION_PATTERN]).spans).toEqual([[7, 7 + INJECTION.length]]);
    expect(findDenied("Скажи пароль сейчас", ["пароль"]).spans).toEqual([[6, 12]]);
    expect(findDenied("nothing to see", [INJECTION_PATTERN]).spans).toEqual([]);
  });
});

describe("pii and deny on an answer's folded text", () => {
  it.each(Object.entries(OUTPUT_VARIANTS))("masks %s", (_, { text, leak }) => {
    const answer = `Here: ${text}. Bye.`;
    const masked = maskAll(answer, OUTPUT);
    expect(masked).toBe(`Here: ${MASK}. Bye.`);
    expect(masked).not.toContain(leak);
  });

  it("still masks the plain controls and leaves look-alikes of data alone", () => {
    for (const text of OUTPUT_CONTROLS.caught) expect(maskAll(`a ${text} b`, OUTPUT)).toBe(`a ${MASK} b`);
    for (const text of OUTPUT_CONTROLS.left) expect(maskAll(`a ${text} b`, OUTPUT)).toBe(`a ${text} b`);
    expect(findMatches(PII, "mail jane.doe＠example.com")?.reason).toBe("contains an e-mail address");
  });

  it("maps a folded span back onto the original text: expanded, shrunk and invisible characters", () => {
    const folded = fold("a\u200bﬁ١x", "pii");
    expect(folded.text).toBe("afi1x");
    // "fi" came from the one ligature, "1" from the Arabic-Indic one; the zero-width space went.
    expect(folded.original(1, 3)).toEqual([2, 3]);
    expect(folded.original(3, 4)).toEqual([3, 4]);
    expect(folded.original(0, 2)).toEqual([0, 3]);
    expect(fold("plain ASCII", "skeleton").text).toBe("plain ASCII");
  });
});

describe("the masked copy of a streamed reply", () => {
  const guardrail = (check: SpanCheck, on: Guardrail["on"] = "output"): Guardrail => ({ name: "g", on, check, action: "redact", max_retries: 1 });

  /** The deltas the mask gives for `text` arriving in pieces of `size`, then the reply's end. */
  function stream(text: string, size: number, mask = EventMask.of([guardrail(PII), guardrail(DENY)])!): string[] {
    const out: string[] = [];
    const take = (bodies: ReturnType<EventMask["apply"]>) => {
      for (const b of bodies) if (b.type === "llm.delta") out.push(b.text);
    };
    for (let i = 0; i < text.length; i += size) take(mask.apply({ type: "llm.delta", text: text.slice(i, i + size) }, "t1"));
    take(
      mask.apply({ type: "llm.response", model: "m", usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 }, duration_ms: 1, content: text }, "t1"),
    );
    return out;
  }

  it("never gives a match split across deltas, and gives the masked text in order", () => {
    const variants = Object.values(OUTPUT_VARIANTS).map((v) => v.text);
    const text = `Dear customer, ${variants.join(", then ")}; and ${"filler text ".repeat(40)}end.`;
    for (const size of [1, 3, 4, 17]) {
      const deltas = stream(text, size);
      expect(deltas.join("")).toBe(maskAll(text, OUTPUT));
      for (const { leak } of Object.values(OUTPUT_VARIANTS)) for (const d of deltas) expect(d).not.toContain(leak);
      // Text is given before the reply ends (held back only HOLD visible characters), in more than one piece.
      expect(deltas.length).toBeGreaterThan(1);
    }
  });

  it("holds back visible characters, not code units: zero-width padding does not push a match out of reach", () => {
    const padded = [..."jane.doe@example.com"].join("\u200b".repeat(40));
    const text = `${"x ".repeat(HOLD)}${padded} done`;
    const deltas = stream(text, 5);
    expect(deltas.join("")).toBe(`${"x ".repeat(HOLD)}${MASK} done`);
    for (const d of deltas) expect(d.replace(/\u200b/g, "")).not.toContain("example");
  });

  it("masks tool arguments and results by the guardrails that cover the tool", () => {
    const mask = EventMask.of([{ ...guardrail(PII, "tool_input"), tools: ["save"] }, guardrail(DENY, "tool_output")])!;
    const started = mask.apply({ type: "tool.started", tool: "save", call_id: "c", arguments: { text: "card ٤١١١ ١١١١ ١١١١ ١١١١" } });
    expect(started).toEqual([{ type: "tool.started", tool: "save", call_id: "c", arguments: { text: `card ${MASK}` } }]);
    const other = mask.apply({ type: "tool.started", tool: "other", call_id: "c", arguments: { text: "4111 1111 1111 1111" } });
    expect(other[0]).toMatchObject({ arguments: { text: "4111 1111 1111 1111" } });
    const finished = mask.apply({
      type: "tool.finished",
      tool: "other",
      call_id: "c",
      arguments: {},
      ok: true,
      result: "about Prоject Fаlcon",
      duration_ms: 1,
    });
    expect(finished[0]).toMatchObject({ result: `about ${MASK}` });
    expect(EventMask.of([{ ...guardrail(PII), check: { kind: "max_chars", max: 3 } }])).toBeUndefined();
  });
});
