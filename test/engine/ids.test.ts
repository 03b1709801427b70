import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { newId, uuidV7At } from "../../src/ids.js";

/** RFC 9562 UUID v7: version nibble 7, variant bits 10. */
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
/** The millisecond an id was made in, from its first 48 bits. */
const timeOf = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("ids (src/ids.ts)", () => {
  it("are UUIDs of version 7 that carry the millisecond they were made in", () => {
    const before = Date.now();
    const ids = Array.from({ length: 1000 }, newId);
    const after = Date.now();
    for (const id of ids) {
      expect(id).toMatch(UUID_V7);
      expect(timeOf(id)).toBeGreaterThanOrEqual(before);
      expect(timeOf(id)).toBeLessThanOrEqual(after);
    }
    expect(new Set(ids).size).toBe(1000);
    expect(uuidV7At(0x0123456789ab)).toMatch(/^01234567-89ab-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    for (const bad of [-1, 1.5, 2 ** 48, Number.NaN]) expect(() => uuidV7At(bad)).toThrow(RangeError);
  });

  it("made in later milliseconds sort after earlier ones, as strings", () => {
    const times = [0, 1, 255, 256, 4095, 4096, 0xffffffff, 0x100000000, Date.UTC(2026, 0, 1), Date.UTC(2100, 0, 1)];
    const ids = times.map(uuidV7At);
    expect([...ids].sort()).toEqual(ids);
  });

  it("of a run (task, steps, recursions) are time-ordered, so the trace store appends its index entries", async () => {
    const traceDir = mkdtempSync(join(tmpdir(), "ids-"));
    dirs.push(traceDir);
    const team = await loadTeam(fileURLToPath(new URL("../../teams/circle-react.yaml", import.meta.url)));
    const events: RunEvent[] = [];
    const started = Date.now();
    const run = runTeam(team, { input: "What is the area of a circle with radius 5?", traceDir, sinks: [(e) => events.push(e)] });
    const result = await run.result;
    expect(result.result_type).toBe("answer");
    const traceIds = [...new Set(events.flatMap((e) => (e.trace_id ? [e.trace_id] : [])))];
    const stepIds = [...new Set(events.flatMap((e) => (e.step_id ? [e.step_id] : [])))];
    expect(traceIds.length).toBeGreaterThan(1);
    for (const id of [run.task_id, ...traceIds, ...stepIds]) {
      expect(id).toMatch(UUID_V7);
      expect(timeOf(id)).toBeGreaterThanOrEqual(started);
      expect(timeOf(id)).toBeLessThanOrEqual(Date.now());
    }
    // Recursions made one after the other: their ids never go back in time.
    const times = traceIds.map(timeOf);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });
});
