/**
 * The model and tool calls of the run's projection (./projection.ts,
 * docs/design/projection.md): each call opened, matched with the event that
 * closes it, numbered (`m1`, `t2`, ... stable for one stream) and counted on
 * the tree, and the calls in flight per step. A part of the one fold, used by
 * `RunProjection` only: pure, and it imports no value (it runs in the page).
 */
import type { Container, ModelCall, RunTree, StepNode, ToolCall } from "./run-tree.js";
import type { EventOf, RunEvent } from "./types.js";

export class CallTracker {
  /** Model calls in flight per step, oldest first (a fallback opens the next before the first closes). */
  private readonly models = new Map<string, ModelCall[]>();
  private readonly tools = new Map<string, ToolCall>();
  /** Calls in flight per step, oldest first. */
  private readonly inFlight = new Map<string, Set<ModelCall | ToolCall>>();
  private calls = 0;

  /** `tree` is the projection's: its call counts are kept here. */
  constructor(private readonly tree: RunTree) {}

  /** A step's model and tool calls in flight, oldest first. */
  running(step: string): readonly (ModelCall | ToolCall)[] {
    return [...(this.inFlight.get(step) ?? [])];
  }

  /** The run ended: every call still open is `unfinished` (a resume that takes one up again reopens it). */
  cutShort(): void {
    for (const open of this.models.values()) for (const call of open.splice(0)) call.status = "unfinished";
    for (const calls of this.inFlight.values()) for (const call of calls) call.status = "unfinished";
    this.inFlight.clear();
  }

  /** A model call opened by its llm.request, or by a `fallback` notice (its model named by its reply). */
  openModel(step: StepNode, at: Container, e: RunEvent, fields: Partial<ModelCall>): ModelCall {
    const call: ModelCall = { kind: "model", id: `m${++this.calls}`, step: step.id, started_at: e.ts, status: "running", ...fields, ...where(at, e) };
    at.children.push(call);
    list(this.models, step.id).push(call);
    this.flying(call, true);
    return call;
  }

  /** The step's oldest open model call closed by its reply or error. */
  closeModel(step: StepNode, at: Container, e: EventOf<"llm.response" | "llm.error">): ModelCall {
    const open = this.models.get(step.id)?.shift();
    const duration = e.type === "llm.response" ? e.duration_ms : undefined;
    const call =
      open ??
      // A reply without a request in the stream: it began its duration before.
      this.placeModel(step, at, e, duration);
    call.model ??= e.model;
    if (e.model_name !== undefined) call.model_name = e.model_name;
    this.flying(call, false);
    call.ended_at = e.ts;
    call.duration_ms = duration ?? Math.max(0, Date.parse(e.ts) - Date.parse(call.started_at));
    this.tree.model_calls += 1;
    if (e.type === "llm.error") {
      call.status = "error";
      call.error = e.error;
      return call;
    }
    call.status = "ok";
    call.usage = e.usage;
    call.action = e.action_type ?? (e.tool_calls?.length ? "tool_calls" : "reply");
    for (const key of ["finish_reason", "reasoning", "thought", "content", "tool_calls", "error"] as const) {
      if (e[key] !== undefined) Object.assign(call, { [key]: e[key] });
    }
    return call;
  }

  private placeModel(step: StepNode, at: Container, e: RunEvent, duration: number | undefined): ModelCall {
    const began = new Date(Date.parse(e.ts) - (duration ?? 0)).toISOString();
    const call: ModelCall = {
      kind: "model",
      id: `m${++this.calls}`,
      step: step.id,
      started_at: Number.isNaN(Date.parse(began)) ? e.ts : began,
      status: "running",
      ...where(at, e),
    };
    at.children.push(call);
    return call;
  }

  startTool(step: StepNode, at: Container, e: EventOf<"tool.started">): ToolCall {
    const key = `${step.id}/${e.call_id}`;
    const seen = this.tools.get(key);
    // A resumed run starts again a call that did not finish: the same call, started anew.
    if (seen && seen.status !== "ok" && seen.status !== "error") {
      seen.status = "running";
      this.flying(seen, true);
      seen.started_at = e.ts;
      return seen;
    }
    const call: ToolCall = {
      kind: "tool",
      id: `t${++this.calls}`,
      step: step.id,
      tool: e.tool,
      call_id: e.call_id,
      arguments: e.arguments,
      started_at: e.ts,
      status: "running",
      called_steps: [],
      ...where(at, e),
    };
    at.children.push(call);
    this.tools.set(key, call);
    this.flying(call, true);
    this.tree.tool_calls += 1;
    return call;
  }

  /** A tool's progress: the latest is kept on its call while it works (none for a call not seen starting). */
  progressTool(step: StepNode, e: EventOf<"tool.progress">): ToolCall | undefined {
    const call = this.tools.get(`${step.id}/${e.call_id}`);
    if (call === undefined || call.status !== "running") return undefined;
    call.progress = {
      ...(e.message !== undefined ? { message: e.message } : {}),
      ...(e.progress !== undefined ? { progress: e.progress } : {}),
      ...(e.total !== undefined ? { total: e.total } : {}),
    };
    return call;
  }

  finishTool(step: StepNode, at: Container, e: EventOf<"tool.finished">): ToolCall {
    const key = `${step.id}/${e.call_id}`;
    let call = this.tools.get(key);
    if (!call || call.status === "ok" || call.status === "error") {
      const began = new Date(Date.parse(e.ts) - e.duration_ms);
      call = {
        kind: "tool",
        id: `t${++this.calls}`,
        step: step.id,
        tool: e.tool,
        call_id: e.call_id,
        arguments: e.arguments,
        started_at: Number.isNaN(began.getTime()) ? e.ts : began.toISOString(),
        status: "running",
        called_steps: [],
        ...where(at, e),
      };
      at.children.push(call);
      this.tools.set(key, call);
      this.tree.tool_calls += 1;
    }
    this.flying(call, false);
    call.status = e.ok ? "ok" : "error";
    call.ended_at = e.ts;
    call.duration_ms = e.duration_ms;
    if (e.ok) call.result = e.result;
    if (e.error !== undefined) call.error = e.error;
    return call;
  }

  private flying(call: ModelCall | ToolCall, on: boolean): void {
    const calls = this.inFlight.get(call.step) ?? new Set();
    if (on) this.inFlight.set(call.step, calls.add(call));
    else calls.delete(call);
  }
}

function where(at: Container, e: RunEvent): { trace_id?: string; iteration?: number } {
  return {
    ...(e.trace_id !== undefined ? { trace_id: e.trace_id } : {}),
    ...(at.kind === "recursion" && at.iteration !== undefined ? { iteration: at.iteration } : {}),
  };
}

function list<T>(map: Map<string, T[]>, key: string): T[] {
  const items = map.get(key) ?? [];
  map.set(key, items);
  return items;
}
