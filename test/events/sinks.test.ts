import { describe, expect, test } from "vitest";
import { EventBus } from "../../src/events/bus.js";
import { ndjsonSink } from "../../src/events/ndjson-sink.js";
import { terminalSink } from "../../src/events/terminal-sink.js";
import type { EventScope, RunEvent } from "../../src/events/types.js";
import { circleReactRun, steppingClock, todo } from "../support/trace-events.js";

/** Collects what a sink writes. */
function collector(columns?: number) {
  const chunks: string[] = [];
  return { chunks, columns, write: (c: string) => chunks.push(c), text: () => chunks.join("") };
}

const ESC = "\x1b";
const s: EventScope = { agent_id: "planner", step_id: "p1" };

/** A todo stream in which versions 2 and 3 arrive again after 4 (stale) and item 2 skips ahead. */
function todoEvents(): RunEvent[] {
  const bus = new EventBus("task-t", steppingClock());
  const out: RunEvent[] = [];
  bus.subscribe((e) => out.push(e));
  bus.emit({ type: "run.started", input: "circle" }, { agent_id: "planner" });
  bus.emit({ type: "agent.started", kind: "plan_and_solve", input: "circle" }, s);
  bus.emit({ type: "todo.updated", session_id: "sess", version: 1, todos: [todo(1, "Look up formula", "pending"), todo(2, "Compute area", "pending")] }, s);
  bus.emit({ type: "todo.item_progress", session_id: "sess", version: 2, item: todo(1, "Look up formula", "in_progress") }, s);
  bus.emit({ type: "todo.item_progress", session_id: "sess", version: 4, item: todo(1, "Look up formula", "completed", 1) }, s);
  bus.emit({ type: "todo.item_progress", session_id: "sess", version: 3, item: todo(1, "Look up formula", "failed") }, s); // stale
  bus.emit({ type: "todo.updated", session_id: "sess", version: 4, todos: [todo(1, "STALE LIST", "pending")] }, s); // stale: not newer
  bus.emit({ type: "todo.item_progress", session_id: "sess", version: 5, item: todo(2, "Compute area", "skipped") }, s);
  bus.emit({ type: "todo.item_progress", session_id: "other", version: 1, item: todo(1, "Other session item", "blocked") }, s);
  bus.emit(
    { type: "todo.completed", session_id: "sess", version: 6, todos: [todo(1, "Look up formula", "completed", 1), todo(2, "Compute area", "skipped")] },
    s,
  );
  bus.emit(
    { type: "run.finished", result_type: "answer", answer: "78.54", usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
    { agent_id: "planner" },
  );
  return out;
}

describe("terminalSink, not a terminal", () => {
  test("plain appended lines: recursions, llm and tool calls with durations, plan, compact states, nested agent", () => {
    const out = collector();
    const sink = terminalSink(out, { color: false });
    for (const e of circleReactRun()) sink(e);
    sink.close();
    const text = out.text();
    expect(text).not.toContain(ESC);
    expect(text).toMatchInlineSnapshot(`
      "▶ run task-circle: What are the area and circumference of a circle with radius 5?
      ▶ solver (react)
      state react: INIT → RECURSION
      recursion 1 · trace tr-1
      state react: RECURSION → INPUT → CALL_LLM
      llm gpt-4o-mini → PLAN · 340 tok · 812ms
        thought: I need a plan first.
      plan:
        1. Compute the area
        2. Compute the circumference
        3. Answer
      recursion 2 · trace tr-2
      llm gpt-4o-mini → CALL_TOOL · 380 tok · 640ms
      tool calculator ✓ 3ms  {"expression":"pi * 5^2"} → 78.54
      ✗ tool calculator 2ms  {"expression":"2 * pi * 5 +"} error: Unexpected end of expression (char 12)
      plan updated (1/3 finished):
        [x] 1. Compute the area
        [ ] 2. Compute the circumference
        [ ] 3. Answer
      recursion 3 · trace tr-3
      llm gpt-4o-mini → CALL_TOOL · 420 tok · 500ms
        ▶ helper (react): circumference of r=5
        recursion 1 · trace tr-h1
        llm gpt-4o-mini → ANSWER · 110 tok · 300ms
        ■ helper answered · 110 tok
      tool helper ✓ 450ms  {"query":"circumference of r=5"} → 31.42
      recursion 4 · trace tr-4
      llm gpt-4o-mini → ANSWER · 475 tok · 700ms
      state react: RECURSION → RESULT_TYPE
      ■ solver answered · 1725 tok
      ■ answer · 3.00s · 1725 tok
      "
    `);
    expect(text).toContain("tool calculator ✓ 3ms");
    expect(text).toContain("recursion 4 · trace tr-4");
  });

  test("the todo list as checklist lines; stale versions dropped", () => {
    const out = collector();
    const sink = terminalSink(out, { color: false });
    for (const e of todoEvents()) sink(e);
    sink.close();
    const lines = out.text().split("\n");
    expect(lines.filter((l) => l.includes("todo v"))).toEqual([
      "todo v1 · 0/2 done",
      "todo v2 · [~] 1. Look up formula",
      "todo v4 · [x] 1. Look up formula",
      "todo v5 · [-] 2. Compute area",
      "todo v1 · [!] 1. Other session item (blocked)",
      "todo v6 completed · 2/2 done",
    ]);
    expect(lines).toContain("  [ ] 1. Look up formula");
    expect(lines).toContain("  [-] 2. Compute area");
    expect(out.text()).not.toContain("STALE LIST");
    // A later full list with the same items shows only the items that changed.
    const more = collector();
    const sink2 = terminalSink(more, { color: false });
    const list = (version: number, second: "pending" | "in_progress") =>
      ({
        type: "todo.updated",
        session_id: "z",
        version,
        todos: [todo(1, "A", "completed"), todo(2, "B", second)],
        seq: version,
        ts: "2025-01-01T00:00:00Z",
        task_id: "t",
        agent_id: "a",
      }) as RunEvent;
    sink2(list(1, "pending"));
    sink2(list(2, "in_progress"));
    expect(more.text()).toBe("todo v1 · 1/2 done\n  [x] 1. A\n  [ ] 2. B\ntodo v2 · 1/2 done\n  [~] 2. B\n");
    expect(out.text()).not.toContain("(failed)");
  });

  test("the answer as it is written, at once, each line after ┆; never a reply's raw deltas; the next line ends it", () => {
    const bus = new EventBus("task-d", steppingClock());
    const out = collector();
    const log = terminalSink(out, { color: false });
    bus.subscribe(log);
    // Raw deltas (a tool-call reply's, say) are not shown: only what the answer reader hands over.
    bus.emit({ type: "llm.delta", text: '{"action_type": "CALL_TOOL"' }, s);
    expect(out.text()).toBe("");
    log.answer("Hel");
    expect(out.text()).toBe("  ┆ Hel");
    log.answer("lo\nwor");
    log.answer("ld\n\nbye");
    expect(out.text()).toBe("  ┆ Hello\n  ┆ world\n  ┆ \n  ┆ bye");
    bus.emit({ type: "llm.response", model: "m", usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, duration_ms: 5 }, s);
    expect(out.text()).toBe("  ┆ Hello\n  ┆ world\n  ┆ \n  ┆ bye\nllm m → reply · 2 tok · 5ms\n");
    log.answer("tail");
    log.close();
    expect(out.text().endsWith("5ms\n  ┆ tail\n")).toBe(true);
  });

  test("never prints secrets", () => {
    const bus = new EventBus("task-s", steppingClock(), { secrets: ["conf-key-123456"] });
    const out = collector();
    bus.subscribe(terminalSink(out, { color: false }));
    bus.emit({ type: "run.started", input: "key sk-abcdefghijklmnop" }, s);
    bus.emit(
      {
        type: "tool.finished",
        tool: "http",
        call_id: "c",
        arguments: { api_key: "k-SECRET-1" },
        ok: false,
        error: "401 Bearer tok-SECRET-2 conf-key-123456",
        duration_ms: 1,
      },
      s,
    );
    expect(out.text()).not.toMatch(/SECRET|sk-abcdefghijklmnop|conf-key-123456/);
    expect(out.text()).toContain("[REDACTED]");
  });
});

describe("terminalSink in colour (a terminal)", () => {
  test("appends lines only: colours, never a cursor movement or an erase, the same lines as without colour", () => {
    const out = collector(60);
    const sink = terminalSink(out, { color: true });
    const plain = collector();
    const sinkPlain = terminalSink(plain, { color: false });
    for (const e of todoEvents()) {
      sink(e);
      sinkPlain(e);
    }
    sink.close();
    sinkPlain.close();
    // Only SGR sequences (colours): no cursor up, no erase, no cursor hide.
    expect(
      out
        .text()
        .match(/\x1b\[[0-9;?]*[A-Za-z]/g)
        ?.every((seq) => seq.endsWith("m")),
    ).toBe(true);
    expect(out.text().replace(/\x1b\[[0-9;]*m/g, "")).toBe(plain.text());
    // Each chunk is whole lines, written once, in order.
    expect(out.chunks.every((c) => c.endsWith("\n"))).toBe(true);
  });
});

describe("ndjsonSink", () => {
  test("one redacted JSON event per line, in seq order", () => {
    const lines: string[] = [];
    const bus = new EventBus("task-n", steppingClock());
    bus.subscribe(ndjsonSink((line) => lines.push(line)));
    const events = [...circleReactRun("task-n", bus)];
    bus.emit({ type: "tool.started", tool: "http", call_id: "c9", arguments: { headers: { authorization: "Bearer abc.def" }, apiKey: "k-1234567" } }, s);
    expect(lines).toHaveLength(events.length + 1);
    for (const line of lines) expect(line.endsWith("\n") && !line.slice(0, -1).includes("\n")).toBe(true);
    const parsed = lines.map((l) => JSON.parse(l) as RunEvent);
    expect(parsed.slice(0, events.length)).toEqual(events);
    expect(parsed.map((e) => e.seq)).toEqual(parsed.map((_, i) => i + 1));
    expect(parsed.at(-1)).toMatchObject({ arguments: { headers: { authorization: "[REDACTED]" }, apiKey: "[REDACTED]" } });
  });
});
