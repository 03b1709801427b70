/**
 * The one way a guardrail masks text (docs/guardrails.md#actions): each span
 * it found replaced by `[REDACTED]`. Apart from the finders
 * (src/guardrails/matches.ts), so that the step's guards load none of them
 * before a guardrail runs.
 */

/** A stretch of a text, in UTF-16 indices: [start, end). */
export type Span = [number, number];

/** What a masked span is replaced with. */
export const MASK = "[REDACTED]";

/** `text` with each span (merged where they overlap) replaced by the mask. */
export function mask(text: string, spans: readonly Span[]): string {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let out = "";
  let at = 0;
  for (const [start, end] of sorted) {
    if (end <= at) continue;
    out += text.slice(at, Math.max(at, start)) + (start >= at ? MASK : "");
    at = end;
  }
  return out + text.slice(at);
}
