/**
 * The runs port (src/store/runs.ts) on every adapter: events read back by
 * run and by recursion, the journal, decisions, run summaries and their
 * listing filters (GET /v1/runs?agent=&status=&session=,
 * docs/server.md#run-history), shortened ids. The same answers, in the
 * same order, from SQLite and PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import { EventBus } from "../../src/events/bus.js";
import type { RunEvent, RunEventBody } from "../../src/events/types.js";
import type { JournalEntry, RunQuery, RunStore } from "../../src/store/runs.js";
import { circleReactRun, steppingClock, todoRun } from "../support/trace-events.js";
import { adapters } from "../support/store-adapters.js";

const USAGE = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };
const OUTCOMES = ["answer", "error", "paused", "running"] as const;

/**
 * Run `i`: entry agent `pipeline` (every third run `solo`), which calls
 * `helper` in every other run; it ends by turns in answer, error, paused or
 * not at all; runs 0..9 belong to the session `chat`; every fifth run was
 * started by the caller `alice`, the one after it by `bob`, the rest by no caller.
 */
function runEvents(i: number): RunEvent[] {
  const task = `task-${String(i).padStart(4, "0")}`;
  const entry = i % 3 === 0 ? "solo" : "pipeline";
  const minute = new Date(Date.UTC(2026, 0, 1, 0, i)).toISOString();
  let seq = 0;
  const event = (body: RunEventBody, agent = entry): RunEvent => ({ ...body, seq: ++seq, ts: minute, task_id: task, agent_id: agent }) as RunEvent;
  const events = [
    event({ type: "run.started", input: `question ${i}`, ...(i < 10 ? { session_id: "chat" } : {}), ...(CALLERS[i % 5] ? { caller: CALLERS[i % 5] } : {}) }),
    event({ type: "agent.started", kind: "react", input: "" }),
  ];
  if (i % 2 === 0) events.push(event({ type: "agent.started", kind: "react", input: "" }, "helper"));
  const outcome = OUTCOMES[i % 4]!;
  if (outcome !== "running")
    events.push(event({ type: "run.finished", result_type: outcome, usage: USAGE, ...(outcome === "error" ? { error: "boom" } : {}) }));
  return events;
}

const CALLERS = ["alice", "bob"];
const RUNS = 1_200;
const ALL = Array.from({ length: RUNS }, (_, i) => runEvents(i));

/** What the filters should give, from the fixture's own rules, newest first. */
function expected(query: RunQuery): string[] {
  const ids: string[] = [];
  for (let i = RUNS - 1; i >= 0; i--) {
    const entry = i % 3 === 0 ? "solo" : "pipeline";
    const agents = i % 2 === 0 ? [entry, "helper"] : [entry];
    if (query.agent !== undefined && !agents.includes(query.agent)) continue;
    if (query.status !== undefined && OUTCOMES[i % 4] !== query.status) continue;
    if (query.session !== undefined && !(query.session === "chat" && i < 10)) continue;
    if (query.caller !== undefined && CALLERS[i % 5] !== query.caller) continue;
    ids.push(`task-${String(i).padStart(4, "0")}`);
  }
  return ids.slice(0, query.limit ?? 20);
}

const QUERIES: RunQuery[] = [
  {},
  { limit: 5 },
  { status: "answer", limit: 1000 },
  { status: "running" },
  { status: "paused", agent: "helper", limit: 1000 },
  { status: "error", agent: "solo", limit: 1000 },
  { agent: "helper", limit: 7 },
  { session: "chat" },
  { session: "chat", status: "answer" },
  { session: "chat", agent: "helper", status: "running" },
  { status: "error", agent: "nobody" },
  { caller: "alice", limit: 1000 },
  { caller: "bob", session: "chat" },
  { caller: "alice", status: "paused", agent: "helper" },
  { caller: "mallory" },
];

/** An append, whether the adapter answers at once or with a promise. */
const append = async (runs: RunStore, events: readonly RunEvent[], journal?: readonly JournalEntry[]) => runs.appendMany(events, journal);

const entry = (key: string, json = "{}", kind: JournalEntry["kind"] = "tool.result"): JournalEntry => ({
  task_id: "task-j",
  key,
  kind,
  ts: "2025-03-01T10:00:00.000Z",
  json,
});

describe.each(adapters())("runs on $name", (adapter) => {
  it("reads a run back whole and after any seq, by recursion, and its summary; commits of two runs interleaved", async () => {
    const { runs } = await adapter.open();
    const a = circleReactRun("task-a");
    const b = todoRun("task-b", new EventBus("task-b", steppingClock("2025-03-01T11:00:00.000Z")));
    // Two runs' events in one commit, then the rest of each in a second.
    await append(runs, [...a.slice(0, 6), ...b.slice(0, 3)]);
    await append(runs, [...a.slice(6), ...b.slice(3)]);
    expect(await runs.eventsOfTask("task-a")).toEqual(a);
    expect(await runs.eventsOfTask("task-b")).toEqual(b);
    expect(await runs.eventsOfTask("task-never")).toEqual([]);
    for (const after of [0, 3, 6, 7, a.length - 1, a.length]) expect(await runs.eventsOfTask("task-a", after)).toEqual(a.filter((e) => e.seq > after));
    // A page: the first `limit` events after a seq, across the two commits.
    for (const [after, limit] of [
      [0, 1],
      [3, 4],
      [5, 2],
      [4, a.length],
      [a.length - 1, 5],
      [a.length, 3],
    ] as const)
      expect(await runs.eventsOfTask("task-a", after, limit)).toEqual(a.filter((e) => e.seq > after).slice(0, limit));
    expect(await runs.lastSeq("task-a")).toBe(a.length);
    expect(await runs.lastSeq("task-never")).toBe(0);
    const traces = [...new Set(a.map((e) => e.trace_id).filter((t) => t !== undefined))];
    expect(traces.length).toBeGreaterThan(1);
    for (const trace of traces) expect(await runs.eventsOfTrace(trace)).toEqual(a.filter((e) => e.trace_id === trace));
    expect((await runs.eventsOfTrace("tr-2")).map((e) => e.type)).toEqual([
      "recursion.started",
      "llm.request",
      "llm.response",
      "tool.started",
      "tool.started",
      "tool.finished",
      "tool.finished",
      "plan.updated",
    ]);
    expect(await runs.eventsOfTrace("no-such-trace")).toEqual([]);

    const solver = await runs.run("task-a");
    expect(solver).toMatchObject({
      task_id: "task-a",
      agent_id: "solver",
      input: "What are the area and circumference of a circle with radius 5?",
      result_type: "answer",
      answer: "Area: 78.54 m², circumference: 31.42 m.",
      usage: { prompt_tokens: 1600, completion_tokens: 125, total_tokens: 1725 },
    });
    expect(solver!.finished_at! > solver!.started_at).toBe(true);
    expect(await runs.run("task-b")).toMatchObject({ agent_id: "planner", result_type: "error", error: "max_iteration 4 reached" });
    expect(await runs.run("task-never")).toBeUndefined();
    expect((await runs.listRuns({ agent: "helper" })).map((r) => r.task_id)).toEqual(["task-a"]);
    // Newest first, and limited.
    expect((await runs.listRuns()).map((r) => r.task_id)).toEqual(["task-b", "task-a"]);
    expect((await runs.listRuns({ limit: 1 })).map((r) => r.task_id)).toEqual(["task-b"]);
  });

  it("text that would break SQL written inline is stored and read back byte for byte, and runs no statement", async () => {
    const { runs } = await adapter.open();
    // Every value of a commit reaches the database: quotes, backslashes (an E'' string's escapes), dollar quoting,
    // a statement's end and a comment, placeholders, non-ASCII.
    const hostile = `it's O''Brien \\ \\' \\x27 $$ $1 $tag$ '); DROP TABLE events; -- /* ü ✓ 🚀 */ \\n`;
    const task = `task-'${hostile.slice(0, 12)}`;
    let seq = 0;
    const event = (body: RunEventBody, agent = `agent-${hostile}`): RunEvent =>
      ({ ...body, seq: ++seq, ts: "2026-01-01T00:00:00.000Z", task_id: task, agent_id: agent, step_id: hostile, trace_id: hostile }) as RunEvent;
    const events = [
      event({ type: "run.started", input: hostile, session_id: hostile, caller: hostile }),
      event({ type: "agent.started", kind: "react", input: hostile }),
      event({ type: "run.finished", result_type: "error", usage: USAGE, error: hostile, answer: hostile }),
    ];
    await append(runs, events, [{ task_id: task, key: hostile, kind: "tool.result", ts: "2026-01-01T00:00:00.000Z", json: JSON.stringify({ hostile }) }]);
    expect(await runs.eventsOfTask(task)).toEqual(events);
    expect(await runs.eventsOfTrace(hostile)).toEqual(events);
    expect(await runs.journalOf(task)).toEqual([expect.objectContaining({ key: hostile, json: JSON.stringify({ hostile }) })]);
    expect(await runs.run(task)).toMatchObject({ task_id: task, agent_id: `agent-${hostile}`, input: hostile, error: hostile, caller: hostile });
    expect((await runs.listRuns({ session: hostile, caller: hostile })).map((r) => r.task_id)).toEqual([task]);
  });

  it("a run still going is listed as unfinished; run.resumed opens a finished run again until it finishes", async () => {
    const { runs } = await adapter.open();
    const events = circleReactRun("task-open");
    await append(runs, events.slice(0, 10));
    const [going] = await runs.listRuns();
    expect(going).toMatchObject({ task_id: "task-open", agent_id: "solver" });
    expect(going?.finished_at).toBeUndefined();
    expect(going?.result_type).toBeUndefined();
    await append(runs, events.slice(10));
    expect((await runs.run("task-open"))?.result_type).toBe("answer");
    const base = { task_id: "task-open", agent_id: "solver", ts: "2025-03-02T10:00:00.000Z" };
    await append(runs, [{ ...base, type: "run.resumed", input: "again", after_seq: events.length, seq: events.length + 1 } as RunEvent]);
    const reopened = await runs.run("task-open");
    expect(reopened?.result_type).toBeUndefined();
    expect(reopened?.finished_at).toBeUndefined();
    expect((await runs.listRuns({ status: "running" })).map((r) => r.task_id)).toEqual(["task-open"]);
    await append(runs, [{ ...base, type: "run.finished", result_type: "paused", usage: USAGE, seq: events.length + 2 } as RunEvent]);
    expect(await runs.run("task-open")).toMatchObject({ result_type: "paused", input: "What are the area and circumference of a circle with radius 5?" });
  });

  it("a seq stored already is refused, and nothing of that append is kept, its journal entries neither", async () => {
    const { runs } = await adapter.open();
    const a = circleReactRun("task-a");
    const b = todoRun("task-b");
    await append(runs, a.slice(0, 6));
    await append(runs, b);
    // A seq inside a stored commit (not its last), beside new events of another run.
    await expect(append(runs, [...a.slice(6, 8), a[2]!], [entry("late")])).rejects.toThrow();
    await expect(append(runs, [b[1]!, ...a.slice(6)])).rejects.toThrow();
    expect(await runs.eventsOfTask("task-a")).toEqual(a.slice(0, 6));
    expect(await runs.eventsOfTask("task-b")).toEqual(b);
    expect(await runs.journalOf("task-j")).toEqual([]);
    await append(runs, a.slice(6));
    expect(await runs.eventsOfTask("task-a")).toEqual(a);
  });

  it("a run's writer: what it appends is durable when durable() settles, in order, across turns; a failing write is one warning, never a rejection", async () => {
    const { runs } = await adapter.open();
    const a = circleReactRun("task-a");
    const stored: number[] = [];
    const writer = runs.writer((seq) => stored.push(seq));
    writer.append(a.slice(0, 3), [entry("0/t0", "{}", "tool.started")]);
    writer.append(a.slice(3, 5), [entry("0/t0", '{"ok":1}')]);
    await writer.durable();
    expect(await runs.eventsOfTask("task-a")).toEqual(a.slice(0, 5));
    expect((await runs.journalOf("task-j")).map((e) => [e.key, e.json])).toEqual([["0/t0", '{"ok":1}']]);
    // Appended over several turns, without asking: committed at the ends of those turns, in order.
    for (let i = 5; i < a.length; i++) {
      writer.append([a[i]!]);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await writer.durable();
    expect(await runs.eventsOfTask("task-a")).toEqual(a);
    expect(stored.at(-1)).toBe(a.length);
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
    process.on("warning", onWarning);
    try {
      const again = runs.writer((seq) => stored.push(seq));
      again.append([a[0]!]);
      await expect(again.close()).resolves.toBeUndefined();
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^TraceStoreWarning: trace store /);
    expect(stored.at(-1)).toBe(a.length);
    await writer.close();
  });

  it("the journal: in binary key order, an entry written again replaces the one before, in one append too", async () => {
    const { runs } = await adapter.open();
    const keys = ["run", "solver#1", "solver#1/t1", "solver#10", "solver#1/m1", "B#1", "a#1"];
    await append(
      runs,
      [],
      keys.map((k) => entry(k, `{"k":"${k}"}`, k === "run" ? "run" : "step")),
    );
    expect((await runs.journalOf("task-j")).map((j) => j.key)).toEqual(["B#1", "a#1", "run", "solver#1", "solver#1/m1", "solver#1/t1", "solver#10"]);
    // A call's start and its result in one append keep the result; a later append replaces it again.
    await append(runs, [], [entry("solver#1/t2", '{"started":true}', "tool.started"), entry("solver#1/t2", '{"result":1}')]);
    expect((await runs.journalOf("task-j")).find((j) => j.key === "solver#1/t2")).toEqual(entry("solver#1/t2", '{"result":1}'));
    await append(runs, [], [entry("solver#1/t2", '{"result":2}')]);
    expect((await runs.journalOf("task-j")).filter((j) => j.key === "solver#1/t2")).toEqual([entry("solver#1/t2", '{"result":2}')]);
    expect(await runs.journalOf("task-other")).toEqual([]);
  });

  it("decisions on calls: recorded by key, replaced by a later one, kept per run", async () => {
    const { runs } = await adapter.open();
    await runs.decide("task-d", { key: "w#1/t1", decision: "deny", reason: "not now", ts: "2025-03-01T10:00:00.000Z" });
    await runs.decide("task-d", { key: "w#1/t2", decision: "approve", ts: "2025-03-01T10:00:01.000Z" });
    await runs.decide("task-e", { key: "w#1/t1", decision: "approve", ts: "2025-03-01T10:00:02.000Z" });
    await runs.decide("task-d", { key: "w#1/t1", decision: "approve", ts: "2025-03-01T10:00:03.000Z" });
    expect(await runs.approvalsOf("task-d")).toEqual(
      new Map([
        ["w#1/t1", { key: "w#1/t1", decision: "approve", ts: "2025-03-01T10:00:03.000Z" }],
        ["w#1/t2", { key: "w#1/t2", decision: "approve", ts: "2025-03-01T10:00:01.000Z" }],
      ]),
    );
    expect([...(await runs.approvalsOf("task-e")).keys()]).toEqual(["w#1/t1"]);
    expect(await runs.approvalsOf("task-none")).toEqual(new Map());
  });

  it("lists runs by agent, status and session, alone and together, each filter done by the database", async () => {
    const { runs } = await adapter.open();
    await append(runs, ALL.flat());
    for (const query of QUERIES) {
      const listed = await runs.listRuns(query);
      expect({ query, ids: listed.map((r) => r.task_id) }).toEqual({ query, ids: expected(query) });
      if (query.status === "running") expect(listed.every((r) => r.finished_at === undefined && r.result_type === undefined)).toBe(true);
      else if (query.status !== undefined) expect(listed.every((r) => r.result_type === query.status)).toBe(true);
    }
    // More answered runs than a store reading a thousand rows and filtering them could find.
    expect(await runs.listRuns({ status: "answer", limit: 1000 })).toHaveLength(300);
    // A run's owner is in its summary (run.started.caller), and only there: runs started by no caller have none.
    expect((await runs.run("task-0005"))?.caller).toBe("alice");
    expect((await runs.run("task-0006"))?.caller).toBe("bob");
    expect(await runs.run("task-0007")).not.toHaveProperty("caller");
  });

  it("a shortened task id names the one run whose id it begins or ends, compared exactly", async () => {
    const { runs } = await adapter.open();
    await append(runs, ALL.flat());
    // One id begins with what another ends with: neither way may win alone.
    const extra = ["ab12-first", "last-ab12"].map(
      (task_id): RunEvent => ({ type: "run.started", input: "q", seq: 1, ts: "2026-02-01T00:00:00.000Z", task_id, agent_id: "solo" }) as RunEvent,
    );
    await append(runs, extra);
    const resolve = (given: string) => runs.resolveTaskId(given);
    expect(await resolve("task-0042")).toBe("task-0042");
    expect(await resolve("task-1199")).toBe("task-1199");
    expect(await resolve("1199")).toBe("task-1199"); // the end of an id
    expect(await resolve("ab12-f")).toBe("ab12-first");
    await expect(resolve("ab12")).rejects.toThrow("task_id ab12 is ambiguous: it begins or ends ab12-first, last-ab12");
    await expect(resolve("task-004")).rejects.toThrow(
      "task_id task-004 is ambiguous: it begins or ends task-0040, task-0041, task-0042, task-0043, task-0044, ...",
    );
    await expect(resolve("99")).rejects.toThrow("task_id 99 is ambiguous: it begins or ends task-0099, task-0199, task-0299, task-0399, task-0499, ...");
    for (const given of ["TASK-0042", "%9", "task_0042", "nope", ""])
      await expect(resolve(given)).rejects.toThrow(new RegExp(`^no run with task_id ${given} in `));
  });
});
