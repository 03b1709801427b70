/**
 * Traces stored before error codes existed: their `agent.finished` and
 * `run.finished` carry `error` as a string and no `error_code`. They still
 * load, and `runtime trace` prints them (docs/events.md#error-codes).
 */
import { describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/events/types.js";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";

const USAGE = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 };

/** A failed run as an earlier version stored it. */
function oldFailedRun(task_id: string): RunEvent[] {
  const base = (seq: number, ms: number) => ({ task_id, agent_id: "solver", seq, ts: new Date(Date.UTC(2025, 0, 1, 0, 0, 0, ms)).toISOString() });
  return [
    { ...base(1, 0), type: "run.started", input: "q" },
    { ...base(2, 10), step_id: "s1", type: "agent.started", kind: "react", input: "q" },
    { ...base(3, 500), step_id: "s1", type: "agent.finished", result_type: "error", error: "reached max_iteration (1) without an answer", usage: USAGE },
    { ...base(4, 510), type: "run.finished", result_type: "error", error: "reached max_iteration (1) without an answer", usage: USAGE },
  ] as RunEvent[];
}

describe("traces of earlier versions", () => {
  it("a failed run stored without error_code loads and prints its error", async () => {
    const dir = tempDir();
    const store = TraceStore.open(dir);
    for (const e of oldFailedRun("old-failed-run")) store.append(e);
    expect(store.eventsOfTask("old-failed-run").at(-1)).toMatchObject({ type: "run.finished", error: "reached max_iteration (1) without an answer" });
    store.close();

    const r = await runCli(["trace", "old-failed-run", "--trace-dir", dir]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("error: reached max_iteration (1) without an answer");
  });
});
