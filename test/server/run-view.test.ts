/**
 * The pure half of src/server/page/timeline.js (docs/server.md#run-history):
 * `runView(project(events))` over the events of real runs of the example teams
 * (scripted models, real tools), and over hand-made event sequences for what
 * those runs do not show (a failed model call and its fallback, a call still
 * going on, a run that ended with a call unfinished).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it, vi } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { project, type RunTree } from "../../src/events/projection.js";
import type { RunEvent, RunEventBody } from "../../src/events/types.js";
import { ROOT } from "../support/cli.js";

vi.setConfig({ testTimeout: 60_000 });

interface Bar {
  id: string;
  kind: "model" | "tool";
  name: string;
  step_id: string;
  start: number;
  end: number;
  ms: number;
  ok: boolean;
  state: "done" | "running" | "unfinished";
  row: number;
  tokens?: number;
  iteration?: number;
  result?: string;
  error?: string;
}
interface Lane {
  step_id: string;
  agent_id: string;
  depth: number;
  parent?: string;
  start: number;
  end: number;
  rows: number;
  bars: Bar[];
}
interface TreeNode {
  type?: "step" | "recursion" | "call";
  step?: Lane & { children: TreeNode[] };
  bar?: Bar;
  children?: TreeNode[];
}
interface RunView {
  task_id: string;
  agent_id: string;
  input: string;
  status: string;
  start: number;
  end: number;
  lanes: Lane[];
  tree: (Lane & { children: TreeNode[] })[];
}
interface RunViewModule {
  runView(run: RunTree, now?: number): RunView;
  barCount(view: RunView): number;
  barDetails(bar: Bar, view: RunView): [string, string][];
}

const MODULE = pathToFileURL(join(ROOT, "src", "server", "page", "timeline.js")).href;
const { runView, barCount, barDetails } = (await import(MODULE)) as RunViewModule;
/** The timeline's model of a run, from the run's projection as the page and `trace --html` make it. */
const buildRunView = (events: RunEvent[], now?: number): RunView => runView(project(events), now);

const CIRCLE = "What are the area and circumference of a circle with radius 5 meters?";
const EXAMPLES: Record<string, string> = {
  "circle-react": CIRCLE,
  "circle-plan": CIRCLE,
  "research-flow": CIRCLE,
  "plan-solver": "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.",
  "safety-sop": "Review: raise the boiler pressure limit from 8 to 10 bar",
};

/** Every call of a tree, depth first. */
function callsOfTree(nodes: TreeNode[]): Bar[] {
  return nodes.flatMap((n) =>
    n.type === "call"
      ? [n.bar!]
      : n.type === "recursion"
        ? callsOfTree(n.children ?? [])
        : callsOfTree((n.type === "step" ? n.step! : (n as Lane & { children: TreeNode[] })).children),
  );
}

describe("buildRunView over the example teams' runs", () => {
  for (const [name, input] of Object.entries(EXAMPLES)) {
    it(`${name}: one bar per model and tool call, inside its step's lane and the run's span`, async () => {
      const team = await loadTeam(join(ROOT, "teams", `${name}.yaml`));
      const run = runTeam(team, { input, traceDir: mkdtempSync(join(tmpdir(), "run-view-")) });
      const events: RunEvent[] = [];
      for await (const e of run.events) events.push(e);
      expect((await run.result).result_type).toBe("answer");

      const view = buildRunView(events);
      const models = events.filter((e) => e.type === "llm.response" || e.type === "llm.error");
      const tools = events.filter((e) => e.type === "tool.finished");
      expect(barCount(view)).toBe(models.length + tools.length);
      expect(view.lanes.flatMap((l) => l.bars).filter((b) => b.kind === "model")).toHaveLength(models.length);
      // One lane per agent step, each call in the lane of its step.
      expect(view.lanes.map((l) => l.step_id).sort()).toEqual(
        events
          .filter((e) => e.type === "agent.started")
          .map((e) => e.step_id)
          .sort(),
      );
      for (const lane of view.lanes) {
        for (const bar of lane.bars) {
          expect(bar.step_id).toBe(lane.step_id);
          expect(bar.state).toBe("done");
          expect(bar.start).toBeLessThanOrEqual(bar.end);
          expect(bar.start).toBeGreaterThanOrEqual(view.start);
          expect(bar.end).toBeLessThanOrEqual(view.end);
        }
        // Calls overlapping in time (parallel tool calls) are on different rows of the lane.
        for (const a of lane.bars) for (const b of lane.bars) if (a !== b && a.start < b.end && b.start < a.end) expect(a.row).not.toBe(b.row);
        expect(lane.rows).toBe(Math.max(1, ...lane.bars.map((b) => b.row + 1)));
        // A child lane comes after its parent's.
        if (lane.parent !== undefined) expect(view.lanes.findIndex((l) => l.step_id === lane.parent)).toBeLessThan(view.lanes.indexOf(lane));
      }
      // The tree holds the same calls, once each.
      expect(
        callsOfTree(view.tree)
          .map((b) => b.id)
          .sort(),
      ).toEqual(view.lanes.flatMap((l) => l.bars.map((b) => b.id)).sort());
      // Tokens of the model bars add up to the run's usage.
      const finished = events.findLast((e) => e.type === "run.finished");
      const tokens = view.lanes.flatMap((l) => l.bars).reduce((n, b) => n + (b.tokens ?? 0), 0);
      expect(finished?.type === "run.finished" && tokens).toBe(finished?.type === "run.finished" && finished.usage.total_tokens);
      expect(view.status).toBe("answer");
      expect(view.input).toBe(input);
      // circle-react calls the calculator twice at once: two rows in its lane.
      if (name === "circle-react") expect(view.lanes[0]!.rows).toBe(2);
    });
  }
});

/** Events of one step, one second apart from `t0`. */
function sequence(bodies: (RunEventBody & { trace_id?: string })[]): RunEvent[] {
  return bodies.map(({ trace_id, ...body }, i) => ({
    ...body,
    seq: i + 1,
    ts: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    task_id: "t1",
    agent_id: "solver",
    step_id: "s1",
    ...(trace_id !== undefined ? { trace_id } : {}),
  })) as RunEvent[];
}

const T0 = Date.UTC(2026, 0, 1);
const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };

describe("buildRunView on event sequences", () => {
  const opening: (RunEventBody & { trace_id?: string })[] = [
    { type: "run.started", input: "q" },
    { type: "agent.started", kind: "react", input: "q" },
    { type: "recursion.started", iteration: 1, trace_id: "r1" },
    { type: "llm.request", model: "main", messages: 2, trace_id: "r1" },
  ];

  it("a failed model call and its fallback: two bars, the second starting when the fallback takes over", () => {
    const view = buildRunView(
      sequence([
        ...opening,
        { type: "llm.error", model: "main", error: "503 <b>down</b>", trace_id: "r1" },
        { type: "llm.notice", model: "main", notice: "fallback", message: "trying backup", trace_id: "r1" },
        { type: "llm.response", model: "backup", usage: USAGE, duration_ms: 1500, action_type: "ANSWER", thought: "done", trace_id: "r1" },
        { type: "agent.finished", result_type: "answer", answer: "a", usage: USAGE },
        { type: "run.finished", result_type: "answer", answer: "a", usage: USAGE },
      ]),
    );
    const [failed, answered] = view.lanes[0]!.bars;
    expect(failed).toMatchObject({
      kind: "model",
      name: "main",
      ok: false,
      start: T0 + 3000,
      end: T0 + 4000,
      ms: 1000,
      iteration: 1,
      error: "503 <b>down</b>",
    });
    expect(answered).toMatchObject({ kind: "model", name: "backup", ok: true, start: T0 + 5000, end: T0 + 6000, ms: 1500, tokens: 15 });
    expect(barDetails(answered!, view)).toEqual(
      expect.arrayContaining([
        ["tokens", "15 (10 prompt + 5 completion)"],
        ["action", "ANSWER"],
        ["thought", "done"],
        ["start", "+5.00 s"],
      ]),
    );
  });

  it("a failed model call with no fallback ends the run: one failed bar, nothing left running", () => {
    const view = buildRunView(
      sequence([
        ...opening,
        { type: "llm.error", model: "main", error: "no reply left", trace_id: "r1" },
        { type: "agent.finished", result_type: "error", error: "no reply left", usage: USAGE },
        { type: "run.finished", result_type: "error", error: "no reply left", usage: USAGE },
      ]),
    );
    expect(view.lanes[0]!.bars.map((b) => [b.kind, b.ok, b.state])).toEqual([["model", false, "done"]]);
    expect(view.status).toBe("error");
  });

  it("a call going on is running and reaches `now`; after the run ended without it, unfinished", () => {
    const going = sequence([
      ...opening,
      { type: "llm.response", model: "main", usage: USAGE, duration_ms: 1000, action_type: "CALL_TOOL", trace_id: "r1" },
      { type: "tool.started", tool: "calculator", call_id: "c1", arguments: { expression: "1+1" }, trace_id: "r1" },
    ]);
    const live = buildRunView(going, T0 + 60_000);
    expect(live.status).toBe("running");
    expect(live.end).toBe(T0 + 60_000);
    expect(live.lanes[0]!.bars.map((b) => [b.kind, b.state, b.start, b.end])).toEqual([
      ["model", "done", T0 + 3000, T0 + 4000],
      ["tool", "running", T0 + 5000, T0 + 60_000],
    ]);
    // Without `now`, a running call reaches the last event.
    expect(buildRunView(going).lanes[0]!.bars[1]).toMatchObject({ state: "running", end: T0 + 5000 });

    const stopped = buildRunView(
      [
        ...going,
        ...sequence([{ type: "run.finished", result_type: "error", error: "interrupted", usage: USAGE }]).map((e) => ({
          ...e,
          seq: 99,
          ts: new Date(T0 + 9000).toISOString(),
        })),
      ],
      T0 + 60_000,
    );
    expect(stopped.status).toBe("error");
    expect(stopped.end).toBe(T0 + 9000);
    expect(stopped.lanes[0]!.bars[1]).toMatchObject({ state: "unfinished", ok: false, start: T0 + 5000, end: T0 + 5000 });
    expect(barCount(stopped)).toBe(2);
  });

  it("no events: an empty view", () => {
    const view = buildRunView([]);
    expect(view.lanes).toEqual([]);
    expect(barCount(view)).toBe(0);
    expect(view.end).toBeGreaterThan(view.start);
  });
});
