/**
 * The ids the runtime makes: task_id, session_id, step_id and trace_id
 * (docs/design/journal.md#ids).
 *
 * They are UUIDs of version 7 (RFC 9562): the first 48 bits are the time in
 * milliseconds, the other 74 random. The trace store indexes events, journal
 * entries and runs by these ids; ids made one after the other sort one after
 * the other, so a new row's index entry goes at the end of the index, on
 * pages already in the cache, where a random id (version 4) lands on any
 * page of the whole index: each commit then rewrites pages spread over the
 * file, more of them as the store grows (bench/trace-ids.mjs). Ids of one
 * millisecond come in random order, and a clock set back makes earlier ids:
 * both only cost index locality, never uniqueness (74 random bits).
 */
import { randomUUID } from "node:crypto";

/** A new UUID v7 of this millisecond, e.g. `019ab5c4-7f3e-7a21-9c4d-1e2f3a4b5c6d`. */
export function newId(): string {
  return uuidV7At(Date.now());
}

/** A new UUID v7 of the millisecond `now` (ms since 1970, a whole number that fits in 48 bits). */
export function uuidV7At(now: number): string {
  if (!Number.isSafeInteger(now) || now < 0 || now > 0xffff_ffff_ffff) throw new RangeError(`no UUID v7 for the time ${now}`);
  // randomUUID (v4) is xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx, with y the variant: keep its
  // random bits after the version digit and put the time in the first 48 bits.
  const time = now.toString(16).padStart(12, "0");
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${randomUUID().slice(15)}`;
}
