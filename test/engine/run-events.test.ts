/**
 * `TeamRun.events` is the store's follow (src/engine/run-events.ts): every
 * event of the run, in order, masked, however long the run and whenever the
 * reader starts, on each adapter and on the default store of a trace directory.
 */
import { describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import type { ResolvedTeam } from "../../src/config/types.js";
import { runTeam, type TeamRun } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import type { ChatClient } from "../../src/models/types.js";
import { adapters } from "../support/store-adapters.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const SECRET = "sk-test-SECRET-events-0123456789";
const DELTAS = 4000;

const loaded = (): Promise<ResolvedTeam> =>
  loadTeam(
    writeTeam(`version: 1
name: long-run
models:
  default: { provider: openai, model: m, base_url: "http://127.0.0.1:9/v1", api_key: ${SECRET} }
agents:
  solver: { kind: react, tools: [terminate] }
`),
  );

/** A model that streams its answer in DELTAS pieces, the team's key in every hundredth (as a leaky model would). */
const streaming = (): ChatClient => ({
  model: "m",
  async chat(request) {
    for (let i = 0; i < DELTAS; i++) request.onDelta?.(i % 100 === 0 ? `${SECRET} ` : `piece ${i} `);
    return {
      content: reactReply("ANSWER", { answer: "done" }),
      tool_calls: [],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
      finish_reason: "stop",
    };
  },
});

async function read(run: TeamRun): Promise<RunEvent[]> {
  const out: RunEvent[] = [];
  for await (const e of run.events) out.push(e);
  return out;
}

function expectWhole(events: RunEvent[], seen: RunEvent[]): void {
  expect(events.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
  expect(events.filter((e) => e.type === "llm.delta")).toHaveLength(DELTAS);
  expect(events.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer", answer: "done" });
  // Masked before they were stored: what is read back is what the sinks got.
  expect(JSON.stringify(events)).not.toContain(SECRET);
  expect(JSON.parse(JSON.stringify(events))).toEqual(JSON.parse(JSON.stringify(seen)));
}

describe.each(adapters())("TeamRun.events on $name", (adapter) => {
  it("gives every event of a run of thousands, in order and masked, to a reader from the start and to one after the end", async () => {
    const store = await adapter.open();
    const seen: RunEvent[] = [];
    const run = runTeam(await loaded(), { input: "go", store, createClient: streaming, sinks: [(e) => seen.push(e)] });
    const early = read(run);
    expect((await run.result).result_type).toBe("answer");
    expectWhole(await early, seen);
    expectWhole(await read(run), seen);
  });
});

describe("TeamRun.events of a run given only a trace directory", () => {
  it("reads the directory's default store, during the run and after it closed its own handle", async () => {
    const seen: RunEvent[] = [];
    const run = runTeam(await loaded(), { input: "go", traceDir: tempDir(), createClient: streaming, sinks: [(e) => seen.push(e)] });
    const during = read(run);
    await run.result;
    expectWhole(await during, seen);
    expectWhole(await read(run), seen);
  });

  it("is empty with tracing off, while the sinks get every event", async () => {
    const seen: RunEvent[] = [];
    const run = runTeam(await loaded(), { input: "go", traceDir: tempDir(), trace: false, createClient: streaming, sinks: [(e) => seen.push(e)] });
    await run.result;
    expect(await read(run)).toEqual([]);
    expect(seen.at(-1)?.type).toBe("run.finished");
  });
});
