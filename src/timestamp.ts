/**
 * The timestamps of events and journal entries (`ts`): ISO 8601 in UTC with
 * milliseconds, as `Date.prototype.toISOString` writes them. Formatting one
 * costs ~1 µs, and a run stamps ~100 of them in a few milliseconds; the text
 * of the last millisecond seen is kept, so each new millisecond is formatted
 * once (docs/performance.md#timestamps).
 */
let lastTime = Number.NaN;
let lastText = "";

/** `date.toISOString()`, the same text, made once per millisecond. Throws as it does on an invalid date. */
export function isoTime(date: Date): string {
  const time = date.getTime();
  if (time !== lastTime) {
    lastText = date.toISOString();
    lastTime = time;
  }
  return lastText;
}
