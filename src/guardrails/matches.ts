/**
 * Where a `deny` or `pii` check finds what it objects to (docs/guardrails.md#checks),
 * in the original text's UTF-16 indices, and the one way it is masked: the
 * guardrail's `redact` and the masked copies of the run's events
 * (src/guardrails/event-mask.ts) both come through here. Matching is on
 * folded copies of the text (src/guardrails/fold.ts), so look-alike spellings
 * are found; the spans map back to the original.
 */
import type { GuardrailCheck } from "../config/types.js";
import { fold } from "./fold.js";
import { mask, type Span } from "./mask.js";
import { describePii, findPii } from "./pii.js";

export type { Span } from "./mask.js";
export { MASK, mask } from "./mask.js";

/** The checks that say where they matched, so their matches can be masked. */
export type SpanCheck = Extract<GuardrailCheck, { kind: "deny" | "pii" }>;

export function isSpanCheck(check: GuardrailCheck): check is SpanCheck {
  return check.kind === "deny" || check.kind === "pii";
}

/** What a span check found: its reason and spans, or nothing. */
export function findMatches(check: SpanCheck, text: string): { reason: string; spans: Span[] } | undefined {
  if (check.kind === "pii") {
    const found = findPii(text, check.types);
    return found.length > 0 ? { reason: `contains ${describePii(found)}`, spans: found.map((s) => [s.start, s.end]) } : undefined;
  }
  const { spans, matched } = findDenied(text, check.patterns);
  return spans.length > 0
    ? { reason: `matches the denied pattern${matched.length > 1 ? "s" : ""} ${matched.map((p) => `/${p}/`).join(", ")}`, spans }
    : undefined;
}

const compiled = new Map<string, RegExp>();

/**
 * Every match of the patterns (case-insensitive) in the text as written, in
 * its `plain` fold and in its `skeleton` fold: a pattern written in another
 * script still matches the text as written, an ASCII one its look-alikes.
 */
export function findDenied(text: string, patterns: readonly string[]): { spans: Span[]; matched: string[] } {
  const spans: Span[] = [];
  const matched: string[] = [];
  const plain = fold(text, "plain");
  const skeleton = fold(text, "skeleton");
  const forms = [{ text, original: (s: number, e: number): Span => [s, e] }, plain, skeleton].filter(
    (form, i, all) => all.findIndex((f) => f.text === form.text) === i,
  );
  for (const pattern of patterns) {
    let regex = compiled.get(pattern);
    if (!regex) compiled.set(pattern, (regex = new RegExp(pattern, "giu")));
    for (const form of forms) {
      for (const m of form.text.matchAll(regex)) {
        if (m[0] === "") continue;
        spans.push(form.original(m.index, m.index + m[0].length));
        if (!matched.includes(pattern)) matched.push(pattern);
      }
    }
  }
  return { spans, matched };
}

/** The last texts masked, by their checks: an event often carries the text another one did (a call's arguments). */
const recent = new WeakMap<readonly SpanCheck[], Map<string, string>>();
const RECENT = 16;

/** `text` with what each check finds masked, one check after another (as `redact` goes). */
export function maskAll(text: string, checks: readonly SpanCheck[]): string {
  if (checks.length === 0 || text === "") return text;
  let seen = recent.get(checks);
  if (!seen) recent.set(checks, (seen = new Map()));
  const known = seen.get(text);
  if (known !== undefined) return known;
  const masked = maskEach(text, checks);
  if (seen.size >= RECENT) seen.delete(seen.keys().next().value!);
  seen.set(text, masked);
  return masked;
}

function maskEach(text: string, checks: readonly SpanCheck[]): string {
  let current = text;
  for (const check of checks) {
    const found = findMatches(check, current);
    if (found) current = mask(current, found.spans);
  }
  return current;
}
