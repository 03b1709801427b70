/**
 * The one projection of the event stream (src/events/projection.ts,
 * docs/design/projection.md), tested once: over real runs of the example
 * teams (scripted models, real tools, nested agents), over hand-made
 * sequences for what those runs do not show (model errors and fallbacks, a
 * run cut short), over a real paused-approved-resumed run through the CLI;
 * and the same figures in every view that renders from it.
 */
import { fileURLToPath } from "node:url";
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from "@opentelemetry/sdk-trace";
import { beforeAll, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { EventBus } from "../../src/events/bus.js";
import { renderSummary } from "../../src/events/live/render.js";
import { viewOf } from "../../src/events/live/state.js";
import { project, RunProjection } from "../../src/events/projection.js";
import { callsOf, stepsOf, type ModelCall, type RunTree, type ToolCall } from "../../src/events/run-tree.js";
import type { EventScope, RunEvent, RunEventBody } from "../../src/events/types.js";
import { otelSink } from "../../src/telemetry/otel-sink.js";
import { renderRunTree } from "../../src/trace/tree.js";
import { runCli } from "../support/cli.js";
import { startOpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";
import { circleReactRun, steppingClock, todoRun } from "../support/trace-events.js";

const CIRCLE = "What are the area and circumference of a circle with radius 5 meters?";
const EXAMPLES: Record<string, string> = {
  "circle-react": CIRCLE,
  "circle-plan": CIRCLE,
  "research-flow": CIRCLE,
  "safety-sop": "Review: raise the boiler pressure limit from 8 to 10 bar",
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

const allCalls = (tree: RunTree) => stepsOf(tree).flatMap(callsOf);
const count = (events: RunEvent[], ...types: RunEvent["type"][]) => events.filter((e) => types.includes(e.type)).length;

describe("the projection of the example teams' runs", () => {
  it("one step per agent invocation, nested as agents call agents; every call closed with the event's own timing", () => {
    for (const [name, events] of Object.entries(runs)) {
      const tree = project(events);
      const finished = events.findLast((e) => e.type === "run.finished");
      expect(tree.status, name).toBe("answer");
      expect(tree.end?.answer, name).toBe(finished?.type === "run.finished" ? finished.answer : "?");
      expect(tree.events, name).toBe(events.length);
      expect(tree.last_seq, name).toBe(events.at(-1)?.seq);
      expect(tree.input, name).toBe(EXAMPLES[name]);
      expect(tree.model_calls, name).toBe(count(events, "llm.response", "llm.error"));
      expect(tree.tool_calls, name).toBe(count(events, "tool.started"));
      expect(tree.usage, name).toEqual(finished?.type === "run.finished" ? finished.usage : undefined);

      const steps = stepsOf(tree);
      const started = events.filter((e) => e.type === "agent.started");
      expect(steps.map((s) => s.step_id).sort(), name).toEqual(started.map((e) => e.step_id).sort());
      for (const e of started) {
        const step = steps.find((s) => s.step_id === e.step_id);
        expect(step?.parent, name).toBe(e.parent_step_id);
        expect(step?.agent_kind, name).toBe(e.kind);
        expect(step?.status, name).not.toBe("running");
      }
      const calls = allCalls(tree);
      expect(calls.filter((c) => c.kind === "model")).toHaveLength(tree.model_calls);
      expect(calls.filter((c) => c.kind === "tool")).toHaveLength(tree.tool_calls);
      for (const e of events) {
        if (e.type !== "tool.finished") continue;
        const call = calls.find((c): c is ToolCall => c.kind === "tool" && c.call_id === e.call_id && c.step === e.step_id);
        expect(call, `${name} ${e.call_id}`).toMatchObject({ status: e.ok ? "ok" : "error", duration_ms: e.duration_ms, ended_at: e.ts, tool: e.tool });
      }
      // Tokens of the model calls add up to the run's usage.
      expect(
        calls.reduce((n, c) => n + (c.kind === "model" ? (c.usage?.total_tokens ?? 0) : 0), 0),
        name,
      ).toBe(tree.usage.total_tokens);
    }
  });

  it("an agent called as a tool is claimed by the tool call that called it", () => {
    const tree = project(runs["safety-sop"] ?? []);
    const steps = stepsOf(tree);
    const calls = allCalls(tree).filter((c): c is ToolCall => c.kind === "tool");
    const called = steps.filter((s) => s.called_by !== undefined);
    expect(called.length).toBeGreaterThan(0);
    for (const step of called) {
      const call = calls.find((c) => c.id === step.called_by);
      expect(call?.tool).toBe(step.agent_id);
      expect(call?.called_steps).toContain(step.id);
      expect(call?.step).toBe(step.parent);
    }
  });

  it("the plan and its task statuses, the checklist source, the last thought", () => {
    const sop = project(runs["safety-sop"] ?? []);
    expect(sop.plan?.steps).toHaveLength(5);
    expect(Object.values(sop.plan_tasks).sort()).toEqual(["completed", "completed", "completed", "completed", "skipped"]);
    expect(sop.checklist).toEqual({ source: "plan" });
    expect(sop.thought?.text).toBeTruthy();
    const todos = project(runs["circle-plan"] ?? []);
    expect(todos.checklist?.source).toBe("todos");
    const list = todos.checklist?.source === "todos" ? todos.todos[todos.checklist.session_id] : undefined;
    expect(list?.todos.every((t) => t.status === "completed" || t.status === "skipped")).toBe(true);
  });

  it("apply returns the node the event opened or closed; folding event by event is the whole fold", () => {
    const events = runs["research-flow"] ?? [];
    const projection = new RunProjection();
    for (const e of events) {
      const node = projection.apply(e);
      if (e.type === "tool.started" || e.type === "tool.finished") expect(node).toMatchObject({ kind: "tool", call_id: e.call_id });
      if (e.type === "llm.request" || e.type === "llm.response") expect(node?.kind).toBe("model");
      if (e.type === "agent.started") expect(node).toMatchObject({ kind: "step", step_id: e.step_id });
      if (e.type === "run.finished") expect(node).toBe(projection.tree);
    }
    expect(JSON.stringify(projection.tree)).toBe(JSON.stringify(project(events)));
  });
});

/** Events of one step, one second apart. */
function sequence(bodies: (RunEventBody & { trace_id?: string; step_id?: string })[]): RunEvent[] {
  return bodies.map(({ trace_id, step_id, ...body }, i) => ({
    ...body,
    seq: i + 1,
    ts: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    task_id: "t1",
    agent_id: "solver",
    step_id: step_id ?? "s1",
    ...(trace_id !== undefined ? { trace_id } : {}),
  })) as RunEvent[];
}
const USAGE = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
const OPENING: (RunEventBody & { trace_id?: string })[] = [
  { type: "run.started", input: "q" },
  { type: "agent.started", kind: "react", input: "q" },
  { type: "recursion.started", iteration: 1, trace_id: "r1" },
  { type: "llm.request", model: "main", messages: 2, trace_id: "r1" },
];

describe("the projection of hand-made sequences", () => {
  it("a model error, then its fallback: two calls, the second opened by the notice and named by its reply", () => {
    const tree = project(
      sequence([
        ...OPENING,
        { type: "llm.error", model: "main", error: "503", trace_id: "r1" },
        { type: "llm.notice", model: "main", notice: "fallback", message: "trying backup", trace_id: "r1" },
        { type: "llm.response", model: "backup", model_name: "spare", usage: USAGE, duration_ms: 1500, action_type: "ANSWER", trace_id: "r1" },
        { type: "agent.finished", result_type: "answer", answer: "a", usage: USAGE },
        { type: "run.finished", result_type: "answer", answer: "a", usage: USAGE },
      ]),
    );
    const [failed, answered] = allCalls(tree) as ModelCall[];
    expect(failed).toMatchObject({ model: "main", status: "error", error: "503", duration_ms: 1000, iteration: 1, trace_id: "r1", messages: 2 });
    expect(answered).toMatchObject({
      model: "backup",
      model_name: "spare",
      fallback_from: "main",
      status: "ok",
      duration_ms: 1500,
      action: "ANSWER",
      usage: USAGE,
    });
    expect(tree.model_calls).toBe(2);
    expect(tree.last_notice).toMatchObject({ kind: "notice", message: "trying backup" });
  });

  it("a run cut short: calls in flight end unfinished; a stopped run's end moves into the roots when it resumes", () => {
    const going = sequence([
      ...OPENING,
      { type: "llm.response", model: "main", usage: USAGE, duration_ms: 1000, action_type: "CALL_TOOL", trace_id: "r1" },
      { type: "tool.started", tool: "calculator", call_id: "c1", arguments: { expression: "1+1" }, trace_id: "r1" },
      { type: "run.finished", result_type: "error", error: "interrupted", usage: USAGE },
      { type: "run.resumed", input: "q", after_seq: 7 },
      { type: "agent.started", kind: "react", input: "q" },
      { type: "tool.started", tool: "calculator", call_id: "c1", arguments: { expression: "1+1" }, trace_id: "r1" },
    ]);
    const projection = new RunProjection();
    for (const e of going.slice(0, 7)) projection.apply(e);
    const tool = allCalls(projection.tree).find((c) => c.kind === "tool");
    expect(tool?.status).toBe("unfinished");
    expect(projection.running("s1")).toEqual([]);
    for (const e of going.slice(7)) projection.apply(e);
    const tree = projection.tree;
    expect(tree.status).toBe("running");
    expect(tree.roots.map((r) => r.kind)).toEqual(["step", "stopped", "resumed"]);
    // The step and the call started again are the same ones, going on.
    expect(stepsOf(tree)).toHaveLength(1);
    expect(allCalls(tree).filter((c) => c.kind === "tool")).toEqual([expect.objectContaining({ call_id: "c1", status: "running" })]);
    expect(tree.tool_calls).toBe(1);
    expect(projection.running("s1")).toHaveLength(1);
  });

  it("the fixtures' runs: errors, todo versions (stale ones dropped), states chained, usage summed while unfinished", () => {
    const todo = project(todoRun());
    expect(todo.status).toBe("error");
    const [planner] = stepsOf(todo);
    expect(planner).toMatchObject({ status: "error", error: "max_iteration 4 reached", todo_session: "sess" });
    expect(todo.todos.sess?.version).toBe(4);
    expect(planner?.children.filter((c) => c.kind === "todo")).toHaveLength(4);
    expect(allCalls(todo)).toEqual([expect.objectContaining({ kind: "model", status: "error", error: "429 Too Many Requests" })]);

    const cut = project(circleReactRun().filter((e) => e.seq <= 15));
    expect(cut.status).toBe("running");
    expect(cut.usage.total_tokens).toBe(720);
    const [solver] = stepsOf(cut);
    expect(solver?.children.find((c) => c.kind === "states")).toEqual({ kind: "states", machine: "react", path: ["INIT", "RECURSION"] });
    expect(solver?.state).toBe("CALL_LLM");
  });

  it("events from outside any step, and an empty stream", () => {
    const bus = new EventBus("t", steppingClock());
    const out: RunEvent[] = [];
    bus.subscribe((e) => out.push(e));
    const s: EventScope = { agent_id: "boss" };
    bus.emit({ type: "llm.notice", model: "m", notice: "layout", message: "laid out" }, s);
    expect(stepsOf(project(out))).toEqual([expect.objectContaining({ id: "agent:boss" })]);
    expect(project([])).toMatchObject({ events: 0, status: "running", roots: [], model_calls: 0 });
  });
});

describe("one run, the same figures in every view", () => {
  it("the trace tree, the OpenTelemetry spans, the live view's summary and the page's model agree", async () => {
    const events = runs["safety-sop"] ?? [];
    const tree = project(events);
    const steps = stepsOf(tree);
    const calls = allCalls(tree);
    const tools = calls.filter((c) => c.kind === "tool");
    const models = calls.filter((c) => c.kind === "model");

    // The trace tree: one line per step, per model call and per tool call; the run's tokens.
    const text = renderRunTree(events);
    expect(text.match(/step \S+ · /g)).toHaveLength(steps.length);
    expect(text.match(/ llm \S+ · /g)).toHaveLength(models.length);
    expect(text.match(/tool \S+ (✓|\d)/g)).toHaveLength(tools.length);
    expect(text.split("\n")[0]).toContain(`${tree.usage.total_tokens.toLocaleString("en-US")} tokens`);

    // The spans: one per step, model call and tool call, with the same tokens.
    const exporter = new InMemorySpanExporter();
    const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    const sink = otelSink(provider.getTracer("test"));
    for (const e of events) sink(e);
    const spans = exporter.getFinishedSpans();
    expect(spans.filter((s) => s.name.startsWith("invoke_agent "))).toHaveLength(steps.length);
    expect(spans.filter((s) => s.name.startsWith("chat "))).toHaveLength(models.length);
    expect(spans.filter((s) => s.name.startsWith("execute_tool "))).toHaveLength(tools.length);
    const spanTokens = spans
      .filter((s) => s.name.startsWith("chat "))
      .reduce((n, s) => n + Number(s.attributes["gen_ai.usage.input_tokens"]) + Number(s.attributes["gen_ai.usage.output_tokens"]), 0);
    expect(spanTokens).toBe(tree.usage.prompt_tokens + tree.usage.completion_tokens);
    // Each tool span is a tool call of the projection.
    for (const span of spans.filter((s) => s.name.startsWith("execute_tool "))) {
      expect(tools.some((c) => c.kind === "tool" && c.call_id === span.attributes["gen_ai.tool.call.id"])).toBe(true);
    }

    // The live view's summary line.
    const [summary] = renderSummary(viewOf(events), { width: 300, now: 0 });
    expect(summary).toContain(`${models.length} model calls · ${tools.length} tool calls · ${tree.usage.total_tokens.toLocaleString("en-US")} tokens`);

    // The page's model (the same timeline.js the page runs): a lane per step, a bar per call, with the calls' durations.
    const { runView, barCount } = (await import(new URL("../../src/server/page/timeline.js", import.meta.url).href)) as {
      runView(run: RunTree): { lanes: { bars: { id: string; ms: number; tokens?: number }[] }[] };
      barCount(view: unknown): number;
    };
    const page = runView(tree);
    expect(page.lanes).toHaveLength(steps.length);
    expect(barCount(page)).toBe(calls.length);
    for (const bar of page.lanes.flatMap((l) => l.bars)) expect(bar.ms).toBe(calls.find((c) => c.id === bar.id)?.duration_ms);
    expect(page.lanes.flatMap((l) => l.bars).reduce((n, b) => n + (b.tokens ?? 0), 0)).toBe(tree.usage.total_tokens);
  });
});

describe("a paused, approved and resumed run (runtime exec, approve, resume)", () => {
  it("one step and one call across the processes; the pause and the resume in the roots; no approval left pending", async () => {
    const server = await startOpenAIServer({
      respond: (body) => {
        const done = (body.messages ?? []).some((m) => m.role === "assistant" && String(m.content).includes("tool_results"));
        return done
          ? { content: reactReply("ANSWER", { answer: "recorded" }) }
          : { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "r0", name: "record", arguments: { n: 0 } }] };
      },
    });
    try {
      const file = writeTeam(
        `version: 1
name: recorder
models:
  default: { provider: openai, model: m, base_url: "${server.url}", api_key: sk-record-0123456789, max_retries: 0 }
tools:
  record:
    command: [node, -e, "process.stdout.write('ok')"]
    description: Record a number.
    parameters: { type: object, properties: { n: { type: integer } }, required: [n] }
    approval: required
agents:
  solver: { kind: react, tools: [record] }
`,
      );
      const traceDir = tempDir();
      const ndjson = (out: string) =>
        out
          .trim()
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l) as RunEvent);
      const paused = await runCli(["exec", file, "record", "--events", "ndjson", "--trace-dir", traceDir]);
      expect(paused.code, paused.stderr).toBe(3);
      const first = ndjson(paused.stdout);
      const taskId = first[0]?.task_id ?? "";
      expect(project(first)).toMatchObject({ status: "paused", pending_approvals: [expect.any(String)] });
      expect((await runCli(["approve", taskId, "--trace-dir", traceDir])).code).toBe(0);
      const resumed = await runCli(["resume", taskId, "--events", "ndjson", "--trace-dir", traceDir]);
      expect(resumed.code, resumed.stderr).toBe(0);
      const events = [...first, ...ndjson(resumed.stdout)];
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));

      const tree = project(events);
      expect(tree.status).toBe("answer");
      expect(tree.pending_approvals).toEqual([]);
      expect(tree.roots.map((r) => r.kind)).toEqual(["step", "stopped", "resumed"]);
      expect(stepsOf(tree)).toHaveLength(1);
      const record = allCalls(tree).filter((c): c is ToolCall => c.kind === "tool");
      expect(record).toEqual([expect.objectContaining({ tool: "record", status: "ok", result: "ok" })]);
      const approvals = stepsOf(tree)
        .flatMap((s) => s.children.flatMap((c) => (c.kind === "recursion" ? c.children : [c])))
        .filter((c) => c.kind === "approval");
      expect(approvals.map((a) => (a.kind === "approval" ? [a.decided, a.decision ?? ""] : []))).toEqual([
        [false, ""],
        [true, "approve"],
      ]);
      // The trace tree draws the same: the pause, the resume, the approval.
      const text = renderRunTree(events);
      expect(text).toContain("⏸ paused: waiting for approval of record");
      expect(text).toContain("⟳ resumed at");
      expect(text).toMatch(/approved record \(call r0\)/);
    } finally {
      await server.close();
    }
  }, 60_000);
});
