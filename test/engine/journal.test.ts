import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { TraceStore, type JournalEntry } from "../../src/trace/store.js";

const teamFile = (name: string) => fileURLToPath(new URL(`../../teams/${name}`, import.meta.url));
const QUESTION = "What are the area and circumference of a circle with radius 5 meters?";

/** Run an example team offline; a sink reads the journal (through its own connection) at every event. */
async function runWithReader(name: string) {
  const traceDir = mkdtempSync(join(tmpdir(), "journal-"));
  const team = await loadTeam(teamFile(name));
  const reader: { store?: TraceStore } = {};
  const seen: { event: RunEvent; keys: Set<string> }[] = [];
  const run = runTeam(team, {
    input: QUESTION,
    traceDir,
    sinks: [
      (event) => {
        reader.store ??= TraceStore.open(traceDir, { create: false });
        seen.push({ event, keys: new Set(reader.store.journalOf(event.task_id).map((e) => e.key)) });
      },
    ],
  });
  const result = await run.result;
  const journal = reader.store!.journalOf(run.task_id);
  reader.store!.close();
  return { result, journal, seen };
}

const value = (entry: JournalEntry | undefined) => JSON.parse(entry?.json ?? "null") as Record<string, unknown>;

describe("the journal", () => {
  it("holds every model reply and tool result of a react run, each committed before the run moves on", async () => {
    const { result, journal, seen } = await runWithReader("circle-react.yaml");
    expect(result.result_type).toBe("answer");
    const keys = journal.map((e) => e.key);
    const responses = seen.filter((s) => s.event.type === "llm.response");
    const finished = seen.filter((s) => s.event.type === "tool.finished");
    // One reply per model call of the step (key 0), one start and one result per tool call.
    expect(keys.filter((k) => /^0\/m\d+$/.test(k))).toHaveLength(responses.length);
    expect(journal.filter((e) => e.kind === "tool.result")).toHaveLength(finished.length);
    expect(finished.length).toBeGreaterThan(0);
    // Before the run moves on: reply k is in the store when the run next acts (a tool starts, or the
    // next recursion begins); a tool's result, when the next model call is made.
    const next = (i: number, types: string[]) => seen.slice(i + 1).find((s) => types.includes(s.event.type));
    responses.forEach((s, k) => {
      const after = next(seen.indexOf(s), ["tool.started", "recursion.started", "agent.finished"]);
      expect(after?.keys.has(`0/m${k}`), `reply ${k}`).toBe(true);
    });
    for (const s of finished) {
      const call_id = s.event.type === "tool.finished" ? s.event.call_id : "";
      const entry = journal.find((e) => e.kind === "tool.result" && value(e).call_id === call_id);
      expect(entry, call_id).toBeDefined();
      expect(next(seen.indexOf(s), ["llm.request", "agent.finished"])?.keys.has(entry!.key)).toBe(true);
      expect(value(entry)).toMatchObject({ ok: true, tool: "calculator" });
    }
    // The stored reply is the reply: its tool calls are the ones the tools ran.
    const firstCalls = (value(journal.find((e) => e.key === "0/m0")).tool_calls ?? []) as { id: string }[];
    const started = seen.filter((s) => s.event.type === "tool.started").map((s) => (s.event.type === "tool.started" ? s.event.call_id : ""));
    expect(firstCalls.length === 0 || started.includes(firstCalls[0]!.id)).toBe(true);
  });

  it("keys the calls of nested agents by their place in the run: step 0.n is the n-th agent step 0 called", async () => {
    const { result, journal } = await runWithReader("research-flow.yaml");
    expect(result.result_type).toBe("answer");
    const steps = new Set(journal.map((e) => e.key.split("/")[0]));
    // The flow itself calls no model; its planner, executors and replanner are its children.
    expect(steps.has("0")).toBe(false);
    expect([...steps].every((s) => /^0\.\d+(\.\d+)*$/.test(s!))).toBe(true);
    expect(steps.has("0.0")).toBe(true);
    expect(journal.some((e) => e.kind === "tool.result")).toBe(true);
  });

  it("is not written when tracing is off", async () => {
    const traceDir = mkdtempSync(join(tmpdir(), "journal-off-"));
    const team = await loadTeam(teamFile("circle-react.yaml"));
    const run = runTeam(team, { input: QUESTION, traceDir, trace: false });
    expect((await run.result).result_type).toBe("answer");
    expect(() => TraceStore.open(traceDir, { create: false })).toThrow(/no trace store/);
  });
});
