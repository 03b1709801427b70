/**
 * The live terminal view (src/events/live/): the reducer over the events of
 * real runs of the example teams, the renderer over every prefix of those
 * runs and synthetic floods in narrow windows (every frame fits), and the
 * throttled writer.
 */
import { fileURLToPath } from "node:url";
import stringWidth from "string-width";
import { beforeAll, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { EventBus } from "../../src/events/bus.js";
import { renderSummary, renderView, tailRows } from "../../src/events/live/render.js";
import { liveSink } from "../../src/events/live/sink.js";
import { agentRoots, checklistOf, LiveState, viewOf } from "../../src/events/live/state.js";
import { stepsOf } from "../../src/events/run-tree.js";
import { FrameWriter } from "../../src/events/live/writer.js";
import type { EventScope, RunEvent, RunEventBody } from "../../src/events/types.js";
import { tempDir } from "../support/team.js";
import { circleReactRun, steppingClock, todo } from "../support/trace-events.js";

const CIRCLE = "What are the area and circumference of a circle with radius 5 meters?";
const EXAMPLES: Record<string, string> = {
  "circle-react": CIRCLE,
  "circle-plan": CIRCLE,
  "research-flow": CIRCLE,
  "plan-solver": "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.",
  "safety-sop": "Review: raise the boiler pressure limit from 8 to 10 bar",
  "unit-convert": "How many kilometres is 26.2 miles?",
};

const runs: Record<string, RunEvent[]> = {};

beforeAll(async () => {
  for (const [name, input] of Object.entries(EXAMPLES)) {
    const file = fileURLToPath(new URL(`../../teams/${name}.yaml`, import.meta.url));
    const events: RunEvent[] = [];
    const result = await runTeam(await loadTeam(file), { input, traceDir: tempDir(), sinks: [(e) => events.push(e)] }).result;
    expect(result.result_type, name).toBe("answer");
    runs[name] = events;
  }
}, 60_000);

const ESC = /\x1b\[[0-9;?]*[A-Za-z]/g;
const plain = (line: string) => line.replace(ESC, "");

/** Every line of the frame within the window. */
function expectFits(lines: string[], width: number, height: number, what: string): void {
  expect(lines.length, `${what}: ${lines.length} lines in ${height} rows`).toBeLessThanOrEqual(height);
  for (const line of lines) expect(stringWidth(line), `${what}: "${plain(line)}" wider than ${width}`).toBeLessThanOrEqual(width);
}

const marks = (view: LiveState) => (checklistOf(view)?.items ?? []).map((i) => i.mark).join(" ");

describe("the live view's state over the example teams' runs", () => {
  it("counts what the run did: model calls, tool calls, tokens; every agent finished", () => {
    for (const [name, events] of Object.entries(runs)) {
      const { run } = viewOf(events);
      const finished = events.find((e) => e.type === "run.finished");
      expect(run.status, name).toBe("answer");
      expect(run.model_calls, name).toBe(events.filter((e) => e.type === "llm.response").length);
      expect(run.tool_calls, name).toBe(events.filter((e) => e.type === "tool.started").length);
      expect(run.usage.total_tokens, name).toBe(finished?.type === "run.finished" ? finished.usage.total_tokens : -1);
      const agents = stepsOf(run);
      expect(agents.length, name).toBe(events.filter((e) => e.type === "agent.started").length);
      expect(
        agents.every((a) => a.ended_at !== undefined && a.status !== "running"),
        name,
      ).toBe(true);
      expect(agentRoots(run).length, name).toBe(1);
    }
  });

  it("nests called agents under their caller", () => {
    const { run, projection } = viewOf(runs["safety-sop"] ?? []);
    const root = agentRoots(run)[0];
    expect(root?.agent_id).toBe("review");
    const strategist = projection.step(root?.steps[0] ?? "");
    expect(strategist?.agent_id).toBe("strategist");
    expect(strategist?.steps.map((c) => projection.step(c)?.agent_id)).toEqual(["analyst", "analyst", "reviewer", "reviewer"]);
  });

  it("the checklist progresses: the SOP plan's tasks, the todo list, the flow's plan", () => {
    const progress = (name: string) => {
      const view = new LiveState();
      const seen: string[] = [];
      for (const e of runs[name] ?? []) {
        view.apply(e);
        const m = marks(view);
        if (m && seen.at(-1) !== m) seen.push(m);
      }
      return seen;
    };
    const sop = progress("safety-sop");
    expect(sop[0]).toBe("pending pending pending pending pending");
    expect(sop).toContain("active active skipped pending pending");
    expect(sop).toContain("done done skipped active pending");
    expect(sop.at(-1)).toBe("done done skipped done done");
    const todos = progress("circle-plan");
    expect(todos.length).toBeGreaterThan(2);
    expect(todos.some((m) => m.includes("active"))).toBe(true);
    expect(
      todos
        .at(-1)
        ?.split(" ")
        .every((m) => m === "done" || m === "skipped"),
    ).toBe(true);
    const flow = progress("research-flow");
    expect(flow).toContain("done active pending");
    expect(flow.at(-1)).toBe("done done");
    expect(progress("plan-solver").at(-1)).toBe("done done done done");
  });

  it("drops stale todo versions and keeps the last thought", () => {
    const bus = new EventBus("t", steppingClock());
    const out: RunEvent[] = [];
    bus.subscribe((e) => out.push(e));
    const s: EventScope = { agent_id: "planner", step_id: "p1" };
    bus.emit({ type: "agent.started", kind: "plan_and_solve", input: "x" }, s);
    bus.emit({ type: "todo.updated", session_id: "a", version: 2, todos: [todo(1, "one", "completed"), todo(2, "two", "in_progress")] }, s);
    bus.emit({ type: "todo.item_progress", session_id: "a", version: 1, item: todo(1, "one", "failed") }, s);
    bus.emit(
      { type: "llm.response", model: "m", usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, duration_ms: 1, thought: "first\nthought" },
      s,
    );
    bus.emit(
      { type: "llm.response", model: "m", usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, duration_ms: 1, thought: "second  thought" },
      s,
    );
    const view = viewOf(out, { priceOf: () => ({ input_per_mtok: 1_000_000, output_per_mtok: 2_000_000 }) });
    expect(marks(view)).toBe("done active");
    expect(view.run.thought).toEqual({ agent_id: "planner", text: "second  thought" });
    expect(view.cost).toBe(6);
  });
});

describe("renderView", () => {
  const SIZES: [number, number][] = [
    [100, 30],
    [120, 40],
    [60, 12],
    [40, 8],
    [24, 5],
    [12, 3],
    [8, 2],
    [5, 1],
    [1, 1],
    [30, 0],
  ];

  it("every frame of every example run fits every window, in colour too", () => {
    let frames = 0;
    for (const [name, events] of Object.entries(runs)) {
      const view = new LiveState({ budget: { max_tokens: 200_000, max_cost_usd: 0.5 } });
      for (const e of events) {
        view.apply(e);
        const now = Date.parse(e.ts) + 1234;
        for (const [width, height] of SIZES) {
          for (const color of [false, true]) {
            expectFits(renderView(view, { width, height, now, color }), width, height, `${name} seq ${e.seq} ${width}x${height}`);
            frames++;
          }
        }
      }
    }
    expect(frames).toBeGreaterThan(5000);
  });

  it("a mid-run frame of the SOP review: tree, checklist, thought, spend", () => {
    const events = runs["safety-sop"] ?? [];
    const at = events.findIndex((e) => e.type === "agent.started" && e.agent_id === "reviewer");
    const view = viewOf(events.slice(0, at + 1));
    const lines = renderView(view, { width: 100, height: 29, now: Date.parse(events[at]?.ts ?? "") });
    const text = lines.join("\n");
    expect(lines[0]).toMatch(/^● \d+\.\ds · \d+ model calls · \d+ tool calls · [\d,]+ tokens$/);
    expect(text).toMatch(/^▸ review \(sop\) .* · DRIVE /m);
    expect(text).toMatch(/^ {2}▸ strategist \(react\) .* · ⚙ reviewer /m);
    expect(text).toMatch(/^ {4}✓ analyst \d+\.\ds$/m);
    expect(text).toMatch(/^ {4}▸ reviewer \(react\)/m);
    expect(text).toContain(
      "plan 3/5\n  ✓ s1/t1 Gather facts → analyst\n  ✓ s1/t2 Identify hazards → analyst\n  – s1/t3 Compare past incidents → analyst\n  ▶ s2/t4 Rate the risk → reviewer\n  ○ s3/t5 Write verdict → reviewer",
    );
    expect(lines.at(-1)).toBe("› strategist: The reviewer rates the risk from the hazards found.");
  });

  it("a flood: 200 todo items, 60 agents deep and wide, wide characters; truncated with … N more", () => {
    const bus = new EventBus("flood", steppingClock("2025-03-01T10:00:00.000Z", 7));
    const out: RunEvent[] = [];
    bus.subscribe((e) => out.push(e));
    const emit = (body: RunEventBody, scope: EventScope) => bus.emit(body, scope);
    emit({ type: "run.started", input: "flood" }, { agent_id: "boss" });
    emit({ type: "agent.started", kind: "plan_and_solve", input: "x" }, { agent_id: "boss", step_id: "s0" });
    for (let i = 1; i <= 60; i++) {
      // Half nested in a chain, half siblings; every third finished.
      const parent = i <= 30 ? `s${i - 1}` : "s0";
      emit({ type: "agent.started", kind: "react", input: "x" }, { agent_id: `agent-${i}-数学エージェント`, step_id: `s${i}`, parent_step_id: parent });
      emit({ type: "state.changed", machine: "react", from: "INIT", to: "RECURSION.CALL_LLM.CALL_TOOL" }, { agent_id: `a${i}`, step_id: `s${i}` });
      emit({ type: "tool.started", tool: "calculator", call_id: `c${i}`, arguments: {} }, { agent_id: `a${i}`, step_id: `s${i}` });
      if (i % 3 === 0 && i > 30)
        emit(
          { type: "agent.finished", result_type: i % 2 ? "error" : "answer", usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } },
          { agent_id: `a${i}`, step_id: `s${i}` },
        );
    }
    const todos = Array.from({ length: 200 }, (_, i) =>
      todo(i + 1, `第${i + 1}項 compute the 🌍 area ${"x".repeat(i % 50)}`, i < 120 ? "completed" : i === 120 ? "in_progress" : "pending"),
    );
    emit({ type: "todo.updated", session_id: "s", version: 1, todos }, { agent_id: "boss", step_id: "s0" });
    emit(
      {
        type: "llm.response",
        model: "m",
        usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
        duration_ms: 1,
        thought: "考え中 🤔 ".repeat(50),
      },
      { agent_id: "boss", step_id: "s0" },
    );
    emit({ type: "llm.notice", model: "m", notice: "fallback", message: "model m failed; n takes over" }, { agent_id: "boss" });
    const view = viewOf(out);
    const now = Date.parse(out.at(-1)?.ts ?? "");
    for (let width = 1; width <= 130; width += 7) {
      for (let height = 0; height <= 45; height += 3)
        expectFits(renderView(view, { width, height, now, color: true }), width, height, `flood ${width}x${height}`);
    }
    const lines = renderView(view, { width: 80, height: 24, now }).map(plain);
    expect(lines).toHaveLength(24);
    expect(lines.filter((l) => /^\s*… \d+ more$/.test(l)).length).toBeGreaterThanOrEqual(2);
    expect(lines.some((l) => l.includes("▶ 第121項"))).toBe(true);
    expect(lines.at(-1)).toBe("! model m failed; n takes over");
    expect(lines.at(-2)?.startsWith("› boss: 考え中 🤔")).toBe(true);
    expect(lines.at(-2)?.endsWith("…")).toBe(true);
  });

  it("short of rows: the deepest running agent and the item in progress rather than bare counts", () => {
    const bus = new EventBus("short", steppingClock());
    const out: RunEvent[] = [];
    bus.subscribe((e) => out.push(e));
    bus.emit({ type: "agent.started", kind: "sop", input: "x" }, { agent_id: "boss", step_id: "s0" });
    bus.emit({ type: "agent.started", kind: "react", input: "x" }, { agent_id: "middle", step_id: "s1", parent_step_id: "s0" });
    bus.emit({ type: "agent.started", kind: "react", input: "x" }, { agent_id: "worker", step_id: "s2", parent_step_id: "s1" });
    bus.emit(
      {
        type: "todo.updated",
        session_id: "t",
        version: 1,
        todos: [todo(1, "first", "completed"), todo(2, "second", "in_progress"), todo(3, "third", "pending")],
      },
      { agent_id: "boss", step_id: "s0" },
    );
    const view = viewOf(out);
    const now = Date.parse(out.at(-1)?.ts ?? "");
    expect(renderView(view, { width: 80, height: 2, now })[1]).toMatch(/^ {4}▸ worker \(react\)/);
    expect(renderView(view, { width: 80, height: 4, now }).slice(2)).toEqual(["todo 1/3", "  ▶ second"]);
    expect(renderView(view, { width: 80, height: 5, now }).slice(1, 3)).toEqual([expect.stringMatching(/^▸ boss/), "… 2 more"]);
  });

  it("the answer as it is written: its latest rows under the agents, broken at the width, in every window; gone once the run has ended", () => {
    const events = circleReactRun();
    const end = events.findIndex((e) => e.type === "run.finished");
    const view = viewOf(events.slice(0, end));
    const now = Date.parse(events[end - 1]?.ts ?? "");
    view.answer = "The area is 78.54 m².\n\nThe circumference is 31.42 m, which is 2πr; 円周は31.42メートル 🙂.";
    const lines = renderView(view, { width: 40, height: 12, now });
    const shown = lines.filter((l) => l.startsWith("┆ ")).map((l) => l.slice(2));
    expect(shown).toEqual(["The area is 78.54 m².", "", "The circumference is 31.42 m, which is", " 2πr; 円周は31.42メートル 🙂."]);
    expect(lines.indexOf(`┆ ${shown[0]}`)).toBeGreaterThan(lines.findIndex((l) => l.startsWith("▸ ")));
    for (const [width, height] of SIZES) {
      for (const color of [false, true]) expectFits(renderView(view, { width, height, now, color }), width, height, `answer ${width}x${height}`);
    }
    // Short of rows, the answer's latest row comes right after the running agent.
    expect(renderView(view, { width: 40, height: 3, now })[2]).toBe("┆  2πr; 円周は31.42メートル 🙂.");
    // A long answer: its last rows, broken from the line's start.
    const long = `${"word ".repeat(20_000)}the end`;
    expect(tailRows(long, 20, 2)).toEqual(["word word word word ", "the end"]);
    expect(tailRows(`${long}!`, 20, 2)).toEqual(["word word word word ", "the end!"]);
    expect(tailRows("one\ntwo\n", 10, 3)).toEqual(["one", "two"]);
    view.apply(events[end] as RunEvent);
    expect(renderView(view, { width: 40, height: 12, now }).some((l) => l.startsWith("┆"))).toBe(false);
  });

  it("the summary: outcome, time, calls, tokens, cost against the budget", () => {
    const events = circleReactRun();
    const view = viewOf(events, { budget: { max_cost_usd: 0.5 }, priceOf: () => ({ input_per_mtok: 150, output_per_mtok: 600 }) });
    const calls = events.filter((e) => e.type === "llm.response" || e.type === "llm.error").length;
    const tools = events.filter((e) => e.type === "tool.started").length;
    const [line] = renderSummary(view, { width: 200, now: 0 });
    expect(line).toMatch(new RegExp(`^✓ answered in \\d+\\.\\ds · ${calls} model calls · ${tools} tool calls · [\\d,]+ tokens · \\$0\\.\\d{4} of \\$0\\.50$`));
    expect(renderSummary(view, { width: 20, now: 0 }).every((l) => stringWidth(l) <= 20)).toBe(true);
    // Every limit of the budget in the live header; the run stopped by Ctrl-C says so.
    const limited = viewOf(events.slice(0, 8), { budget: { max_model_calls: 20, max_tool_calls: 1, max_tokens: 200_000, max_seconds: 120 } });
    const [header] = renderView(limited, { width: 200, height: 10, now: Date.parse(events[7]?.ts ?? "") });
    expect(header).toMatch(/^● \d+\.\ds of 120s · \d+\/20 model calls · \d+\/1 tool call · [\d,]+\/200,000 tokens$/);
    expect(renderSummary(limited, { width: 200, now: 0, interrupted: true })[0]).toMatch(/^✗ interrupted after /);
  });
});

describe("FrameWriter", () => {
  function terminal(columns: number, rows: number) {
    const chunks: string[] = [];
    return { chunks, columns, rows, write: (c: string) => chunks.push(c) };
  }

  it("draws at most one frame per interval, then the pending one; the last frame is never dropped", async () => {
    const out = terminal(40, 10);
    let n = 0;
    const writer = new FrameWriter(out, () => [`frame ${n}`], { intervalMs: 40 });
    for (n = 1; n <= 100; n++) writer.request();
    expect(writer.frames).toBe(1);
    await new Promise((r) => setTimeout(r, 80));
    expect(writer.frames).toBe(2);
    expect(out.chunks.at(-1)).toContain("frame 101");
    n = 200;
    writer.request(); // inside the interval? Drawn now or pending; finish draws it either way.
    writer.finish(["summary"]);
    expect(out.chunks.join("")).toContain("frame 200");
    expect(out.chunks.at(-1)).toMatch(/summary\n/);
    const after = out.chunks.length;
    writer.request();
    await new Promise((r) => setTimeout(r, 60));
    expect(out.chunks.length).toBe(after);
  });

  it("erases the rows the frame took, also when a narrower terminal rewrapped it; fits the frame in one row and column less", () => {
    const out = terminal(40, 10);
    const sizes: { width: number; height: number }[] = [];
    const writer = new FrameWriter(
      out,
      (size) => {
        sizes.push(size);
        return ["a".repeat(30), "b", "c"];
      },
      { intervalMs: 0 },
    );
    writer.request();
    writer.request();
    expect(sizes[0]).toEqual({ width: 39, height: 9 });
    const erased = (chunk: string | undefined) => (/^(?:\x1b\[2K(?:\x1b\[1A)?)+\x1b\[G/.exec(chunk ?? "")?.[0].split("\x1b[1A").length ?? 0) - 1;
    expect(erased(out.chunks[1])).toBe(3);
    out.columns = 10; // 30 columns now take 3 rows
    writer.request();
    expect(erased(out.chunks[2])).toBe(5);
  });
});

describe("liveSink", () => {
  it("redraws on resize and leaves only the summary and a visible cursor", async () => {
    const chunks: string[] = [];
    const listeners: (() => void)[] = [];
    const out = {
      columns: 50,
      rows: 12,
      write: (c: string) => chunks.push(c),
      on: (_: "resize", l: () => void) => listeners.push(l),
      off: (_: "resize", l: () => void) => listeners.splice(listeners.indexOf(l), 1),
    };
    const sink = liveSink(out, { color: false, intervalMs: 0 });
    for (const e of runs["circle-react"] ?? []) sink(e);
    const before = chunks.length;
    out.columns = 20;
    expect(listeners).toHaveLength(1);
    listeners[0]?.();
    expect(chunks.length).toBe(before + 1);
    sink.close();
    expect(listeners).toHaveLength(0);
    expect(chunks.at(-1)).toMatch(/✓ answered in .*\n\x1b\[\?25h$/);
  });
});
