import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { fingerprint } from "../../src/engine/journal.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { JournalEntry } from "../../src/store/runs.js";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";
import { journalAtRequests } from "../support/journal-reader.js";

const teamFile = (name: string) => fileURLToPath(new URL(`../../teams/${name}`, import.meta.url));
const QUESTION = "What are the area and circumference of a circle with radius 5 meters?";

/**
 * Run an example team offline. A sink records every event; at every model
 * request, as it leaves, the journal is read through a second connection
 * (what is committed, not what is pending).
 */
async function runWithReader(name: string) {
  const traceDir = mkdtempSync(join(tmpdir(), "journal-"));
  const team = await loadTeam(teamFile(name));
  const requests: { events: number; committed: Map<string, string> }[] = [];
  const reader = journalAtRequests(traceDir, (journal, seen) =>
    requests.push({ events: seen.length, committed: new Map(journal.map((e) => [e.key, e.kind])) }),
  );
  const run = runTeam(team, { input: QUESTION, traceDir, ...reader.options });
  const result = await run.result;
  if (result.result_type !== "answer") throw new Error(String(result.error?.message));
  const journal = reader.journal(run.task_id);
  reader.close();
  return { result, journal, seen: reader.seen, requests };
}

const value = (entry: JournalEntry | undefined) => JSON.parse(entry?.json ?? "null") as Record<string, unknown>;

describe("the journal", () => {
  it("holds every model reply and tool result of a react run, committed before the next request leaves", async () => {
    const { result, journal, seen, requests } = await runWithReader("circle-react.yaml");
    expect(result.result_type).toBe("answer");
    const keys = journal.map((e) => e.key);
    const responses = seen.filter((e) => e.type === "llm.response");
    const finished = seen.filter((e) => e.type === "tool.finished");
    // One reply per model call of the step (key 0), one start and one result per tool call.
    expect(keys.filter((k) => /^0\/m\d+$/.test(k))).toHaveLength(responses.length);
    expect(journal.filter((e) => e.kind === "tool.result")).toHaveLength(finished.length);
    expect(finished.length).toBeGreaterThan(0);
    // Write-ahead: when request k leaves, replies 0..k-1 and the results of every tool call
    // finished before it are already committed (read through another connection).
    expect(requests).toHaveLength(responses.length);
    requests.forEach((request, k) => {
      for (let j = 0; j < k; j++) expect(request.committed.get(`0/m${j}`), `reply ${j} before request ${k}`).toBe("model.reply");
      const before = seen.slice(0, request.events).filter((e) => e.type === "tool.finished");
      const results = [...request.committed.values()].filter((kind) => kind === "tool.result");
      expect(results, `tool results before request ${k}`).toHaveLength(before.length);
    });
    for (const event of finished) {
      const call_id = event.type === "tool.finished" ? event.call_id : "";
      const entry = journal.find((e) => e.kind === "tool.result" && value(e).call_id === call_id);
      expect(entry, call_id).toBeDefined();
      expect(value(entry)).toMatchObject({ ok: true, tool: "calculator" });
    }
    // The stored reply is the reply: its tool calls are the ones the tools ran.
    const firstCalls = (value(journal.find((e) => e.key === "0/m0")).tool_calls ?? []) as { id: string }[];
    const started = seen.map((e) => (e.type === "tool.started" ? e.call_id : ""));
    expect(firstCalls.length === 0 || started.includes(firstCalls[0]!.id)).toBe(true);
  });

  it("keys the calls of nested agents by their place in the run: step 0.n is the n-th agent step 0 called", async () => {
    const { result, journal } = await runWithReader("research-flow.yaml");
    expect(result.result_type).toBe("answer");
    const calls = journal.filter((e) => e.kind !== "run" && e.kind !== "step");
    const steps = new Set(calls.map((e) => e.key.split("/")[0]));
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

describe("request fingerprints", () => {
  it("stay what journals already hold, so a resume still finds their replies", () => {
    // Digests made by the build before the fingerprint took crypto.hash: stored runs compare against them.
    const messages = [
      { role: "user" as const, content: "What is 2+2?" },
      { role: "system" as const, content: "You are a calculator." },
      { role: "assistant" as const, content: '{"recursion":1}' },
    ];
    const tools = [{ name: "calculator", description: "Evaluate", parameters: { type: "object" } }];
    const hashes = ["user:26e2b5380131680e", "system:537bea2739bd1dd0", "assistant:fd9f7ae89929de37"];
    expect(fingerprint(messages, tools, { name: "f", schema: {} })).toEqual({ hash: "4e1b7bb34dfd6595e2e0274379aa703b", messages: hashes });
    expect(fingerprint(messages)).toEqual({ hash: "7939c6be667cdd5e7a6060f73983c67d", messages: hashes });
  });
});
