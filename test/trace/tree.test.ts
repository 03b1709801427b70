import { describe, expect, test } from "vitest";
import type { RunSummary } from "../../src/store/runs.js";
import { formatRunList, renderRunTree, renderTraceEvents } from "../../src/trace/tree.js";
import { circleReactRun, todoRun } from "../support/trace-events.js";

describe("renderRunTree", () => {
  test("a react run: steps, recursions, llm and tool calls, nested agent, answer", () => {
    const tree = renderRunTree(circleReactRun());
    expect(tree).toMatchInlineSnapshot(`
      "task task-circle · agent solver · answer · 3.00s · 1,725 tokens (prompt 1,600, completion 125)
      started 2025-03-01T10:00:00.000Z
      input: What are the area and circumference of a circle with radius 5?
      ├─ step s1 · solver (react) · answer · 2.80s · 1725 tok
      │  ├─ state react: INIT → RECURSION
      │  ├─ recursion 1 · trace tr-1 · 500ms
      │  │  ├─ state react: RECURSION → INPUT → CALL_LLM
      │  │  ├─ llm gpt-4o-mini · PLAN · 340 tok (300+40) · 812ms · 2 msgs
      │  │  │  └─ thought: I need a plan first.
      │  │  └─ plan (3 steps)
      │  │     ├─ 1. Compute the area
      │  │     ├─ 2. Compute the circumference
      │  │     └─ 3. Answer
      │  ├─ recursion 2 · trace tr-2 · 700ms
      │  │  ├─ llm gpt-4o-mini · CALL_TOOL · 380 tok (350+30) · 640ms · 3 msgs
      │  │  ├─ tool calculator ✓ 3ms  {"expression":"pi * 5^2"} → 78.54
      │  │  ├─ ✗ tool calculator 2ms  {"expression":"2 * pi * 5 +"} error: Unexpected end of expression (char 12)
      │  │  └─ plan updated (1/3 finished)
      │  │     ├─ [x] 1. Compute the area
      │  │     ├─ [ ] 2. Compute the circumference
      │  │     └─ [ ] 3. Answer
      │  ├─ recursion 3 · trace tr-3 · 800ms
      │  │  ├─ llm gpt-4o-mini · CALL_TOOL · 420 tok (400+20) · 500ms · 4 msgs
      │  │  ├─ tool helper ✓ 450ms  {"query":"circumference of r=5"} → 31.42
      │  │  └─ step s2 · helper (react) · answer · 300ms · 110 tok
      │  │     └─ recursion 1 · trace tr-h1 · 100ms
      │  │        └─ llm gpt-4o-mini · ANSWER · 110 tok (100+10) · 300ms
      │  └─ recursion 4 · trace tr-4 · 100ms
      │     ├─ llm gpt-4o-mini · ANSWER · 475 tok (450+25) · 700ms
      │     └─ state react: RECURSION → RESULT_TYPE
      └─ answer: Area: 78.54 m², circumference: 31.42 m.
      "
    `);
    const lines = tree.split("\n");
    expect(lines[0]).toBe("task task-circle · agent solver · answer · 3.00s · 1,725 tokens (prompt 1,600, completion 125)");
    expect(lines).toContain('│  │  ├─ tool calculator ✓ 3ms  {"expression":"pi * 5^2"} → 78.54');
    expect(lines.some((l) => l.includes("✗ tool calculator 2ms") && l.includes("error: Unexpected end of expression"))).toBe(true);
    // The nested agent hangs under the recursion that called it.
    const nested = lines.findIndex((l) => l.includes("step s2 · helper (react)"));
    const rec3 = lines.findIndex((l) => l.includes("recursion 3 · trace tr-3"));
    const rec4 = lines.findIndex((l) => l.includes("recursion 4 · trace tr-4"));
    expect(rec3).toBeLessThan(nested);
    expect(nested).toBeLessThan(rec4);
    expect(lines[nested]).toMatch(/^│ {2}│ {2}└─ /);
    expect(lines.filter((l) => /recursion \d/.test(l))).toHaveLength(5);
    expect(lines[lines.length - 2]).toBe("└─ answer: Area: 78.54 m², circumference: 31.42 m.");
  });

  test("todo lists, task status and errors; the final checklist is the newest version", () => {
    const tree = renderRunTree(todoRun());
    expect(tree).toMatchInlineSnapshot(`
      "task task-todo · agent planner · error · 1.00s · 15 tokens (prompt 10, completion 5)
      started 2025-03-01T10:00:00.000Z
      input: circle
      ├─ step p1 · planner (plan_and_solve) · error · 800ms · 15 tok
      │  ├─ state plan_and_solve: IDLE → PLANNING
      │  ├─ todo v1 · 0/2 done
      │  ├─ todo v2 · [~] 1. Look up formula
      │  ├─ todo v3 · [x] 1. Look up formula
      │  ├─ todo v4 · [!] 2. Compute area (blocked)
      │  ├─ task t1 → error · plan plan-1 error
      │  ├─ ✗ llm gpt-4o-mini error: 429 Too Many Requests
      │  ├─ ✗ error: max_iteration 4 reached
      │  └─ todo list v4 · 1/2 done
      │     ├─ [x] 1. Look up formula
      │     └─ [!] 2. Compute area (blocked)
      └─ ✗ error: max_iteration 4 reached
      "
    `);
    expect(tree).toContain("✗ llm gpt-4o-mini error: 429 Too Many Requests");
    expect(tree).toContain("[!] 2. Compute area (blocked)");
    expect(tree.trimEnd().split("\n").at(-1)).toBe("└─ ✗ error: max_iteration 4 reached");
  });

  test("a run cut short says so, keeps the started tool call, and sums usage from the model calls", () => {
    const events = circleReactRun().filter((e) => e.seq <= 15);
    const tree = renderRunTree(events);
    expect(tree.split("\n")[0]).toBe("task task-circle · agent solver · unfinished (last event seq 15) · 1.40s · 720 tokens (prompt 650, completion 70)");
    expect(tree).toContain("tool calculator … no result recorded");
    expect(tree).toContain("step s1 · solver (react) · unfinished");
    expect(tree).toContain("no run.finished");
  });

  test("colour only when asked", () => {
    expect(renderRunTree(todoRun())).not.toContain("\x1b[");
    expect(renderRunTree(todoRun(), { color: true })).toContain("\x1b[31m✗ error: max_iteration 4 reached\x1b[39m");
  });

  test("one recursion's events", () => {
    const events = circleReactRun().filter((e) => e.trace_id === "tr-2");
    expect(renderTraceEvents(events)).toMatchInlineSnapshot(`
      "trace tr-2 · task task-circle · agent solver · step s1 · 8 events · 700ms
      └─ recursion 2 · trace tr-2 · 700ms
         ├─ llm gpt-4o-mini · CALL_TOOL · 380 tok (350+30) · 640ms · 3 msgs
         ├─ tool calculator ✓ 3ms  {"expression":"pi * 5^2"} → 78.54
         ├─ ✗ tool calculator 2ms  {"expression":"2 * pi * 5 +"} error: Unexpected end of expression (char 12)
         └─ plan updated (1/3 finished)
            ├─ [x] 1. Compute the area
            ├─ [ ] 2. Compute the circumference
            └─ [ ] 3. Answer
      "
    `);
  });
});

describe("formatRunList", () => {
  test("a table with duration, result and the answer or error cut short", () => {
    const runs: RunSummary[] = [
      {
        task_id: "t-2",
        agent_id: "solver",
        input: "q",
        started_at: "2025-03-01T10:00:00.000Z",
        finished_at: "2025-03-01T10:00:02.500Z",
        result_type: "error",
        error: "max_iteration 4 reached",
      },
      {
        task_id: "t-1",
        agent_id: "solver",
        input: "q",
        started_at: "2025-03-01T09:00:00.000Z",
        finished_at: "2025-03-01T09:01:05.000Z",
        result_type: "answer",
        answer: "x".repeat(100),
      },
      { task_id: "t-0", agent_id: "planner", input: "q", started_at: "2025-03-01T08:00:00.000Z" },
    ];
    expect(formatRunList(runs)).toMatchInlineSnapshot(`
      "TASK_ID  AGENT    STARTED (UTC)        DURATION  RESULT      ANSWER / ERROR
      t-2      solver   2025-03-01 10:00:00  2.50s     error       max_iteration 4 reached
      t-1      solver   2025-03-01 09:00:00  1m05s     answer      xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…
      t-0      planner  2025-03-01 08:00:00  -         unfinished
      "
    `);
  });
});
