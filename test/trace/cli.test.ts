import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { EventBus } from "../../src/events/bus.js";
import type { RunEvent } from "../../src/events/types.js";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";
import { runCli } from "../support/cli.js";
import { circleReactRun, steppingClock, todoRun } from "../support/trace-events.js";

let dir: string;
let circle: RunEvent[];

beforeAll(() => {
  if (!existsSync(new URL("../../dist/cli/commands/trace.js", import.meta.url))) {
    throw new Error("dist/ is missing the trace command: run `npm run build` first");
  }
  dir = mkdtempSync(join(tmpdir(), "trace-cli-"));
  const store = TraceStore.open(join(dir, ".runtime"));
  circle = circleReactRun("9f2c7e1a-circle", new EventBus("9f2c7e1a-circle", steppingClock("2025-03-01T10:00:00.000Z")));
  for (const e of circle) store.append(e);
  for (const e of todoRun("4b1d-todo", new EventBus("4b1d-todo", steppingClock("2025-03-01T11:00:00.000Z")))) store.append(e);
  for (const e of circleReactRun("9f2c7e1a-second", new EventBus("9f2c7e1a-second", steppingClock("2025-03-01T12:00:00.000Z")))) {
    store.append(e);
  }
  store.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("runtime trace", () => {
  test("TASK_ID prints the run as a tree", async () => {
    const r = await runCli(["trace", "9f2c7e1a-circle"], { cwd: dir });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toMatch(/^task 9f2c7e1a-circle · agent solver · answer · 3\.00s · 1,725 tokens/);
    expect(lines).toContain("│  ├─ recursion 2 · trace tr-2 · 700ms");
    expect(r.stdout).toContain("tool calculator ✓ 3ms");
    expect(r.stdout).toContain("└─ answer: Area: 78.54 m², circumference: 31.42 m.");
    expect(r.stdout).not.toContain("\x1b[");
  });

  test("a unique prefix of the task id is enough; an ambiguous one is refused", async () => {
    const unique = await runCli(["trace", "4b1d", "--trace-dir", join(dir, ".runtime")]);
    expect(unique.code).toBe(0);
    expect(unique.stdout).toMatch(/^task 4b1d-todo /);
    const ambiguous = await runCli(["trace", "9f2c"], { cwd: dir });
    expect(ambiguous.code).toBe(1);
    expect(ambiguous.stderr).toBe("runtime trace: task_id 9f2c is ambiguous: it begins or ends 9f2c7e1a-circle, 9f2c7e1a-second\n");
  });

  test("--json prints the stored events as JSON lines", async () => {
    const r = await runCli(["trace", "9f2c7e1a-circle", "--json"], { cwd: dir });
    expect(r.code).toBe(0);
    const events = r.stdout
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l) as RunEvent);
    expect(events).toEqual(circle);
  });

  test("--agent lists that agent's runs, newest first", async () => {
    const r = await runCli(["trace", "--agent", "solver"], { cwd: dir });
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^TASK_ID\s+AGENT\s+STARTED \(UTC\)\s+DURATION\s+RESULT\s+ANSWER \/ ERROR$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(["9f2c7e1a-second", "9f2c7e1a-circle"]);
    expect(lines[2]).toMatch(/^9f2c7e1a-circle\s+solver\s+2025-03-01 10:00:00\s+3\.00s\s+answer\s+Area: 78\.54/);
  });

  test("no arguments lists recent runs; --limit bounds them", async () => {
    const all = await runCli(["trace"], { cwd: dir, env: { RUNTIME_TRACE_DIR: join(dir, ".runtime") } });
    expect(all.code).toBe(0);
    expect(
      all.stdout
        .trimEnd()
        .split("\n")
        .slice(1)
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(["9f2c7e1a-second", "4b1d-todo", "9f2c7e1a-circle"]);
    expect(all.stdout).toMatch(/4b1d-todo\s+planner\s+.*error\s+max_iteration 4 reached/);
    const one = await runCli(["trace", "--limit", "1", "--json"], { cwd: dir });
    expect(
      one.stdout
        .trimEnd()
        .split("\n")
        .map((l) => (JSON.parse(l) as { task_id: string }).task_id),
    ).toEqual(["9f2c7e1a-second"]);
  });

  test("--trace-id prints one recursion", async () => {
    const r = await runCli(["trace", "--trace-id", "tr-h1"], { cwd: dir });
    expect(r.code).toBe(0);
    // tr-h1 exists in two stored runs; both show up, each under its task.
    const headers = r.stdout.split("\n").filter((l) => l.startsWith("trace "));
    expect(headers).toEqual([
      "trace tr-h1 · task 9f2c7e1a-circle · agent helper · step s2 · 2 events · 100ms",
      "trace tr-h1 · task 9f2c7e1a-second · agent helper · step s2 · 2 events · 100ms",
    ]);
    expect(r.stdout).toContain("└─ recursion 1 · trace tr-h1 · 100ms");
    expect(r.stdout).toContain("llm gpt-4o-mini · ANSWER · 110 tok (100+10) · 300ms");
  });

  test("not found: exit 1 with a one-line message", async () => {
    const cases: [string[], string][] = [
      [["trace", "nope"], `runtime trace: no run with task_id nope in ${join(dir, ".runtime")}\n`],
      [["trace", "--agent", "ghost"], `runtime trace: no runs of agent ghost in ${join(dir, ".runtime")}\n`],
      [["trace", "--trace-id", "tr-404"], `runtime trace: no events with trace_id tr-404 in ${join(dir, ".runtime")}\n`],
      [["trace", "--trace-dir", join(dir, "empty")], `runtime trace: no trace store in ${join(dir, "empty")} (expected ${join(dir, "empty", "traces.db")})\n`],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args, { cwd: dir });
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.stderr).toBe(message);
      expect(r.stdout).toBe("");
    }
    expect(existsSync(join(dir, "empty"))).toBe(false);
  });

  test("conflicting or bad options: exit 2", async () => {
    const both = await runCli(["trace", "x", "--agent", "solver"], { cwd: dir });
    expect(both.code).toBe(2);
    expect(both.stderr).toBe("runtime trace: give one of TASK_ID, --agent NAME / --session ID / --status S, or --trace-id ID\n");
    const limit = await runCli(["trace", "--limit", "0"], { cwd: dir });
    expect(limit.code).toBe(2);
    expect(limit.stderr).toMatch(/--limit must be a positive integer/);
  });
});
