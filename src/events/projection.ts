/**
 * The one projection of a run's event stream into a run tree
 * (docs/design/projection.md): steps nested as agents call agents,
 * recursions, model and tool calls with their timings, usage and states, and
 * the run's plan, todo lists and approvals. Every view renders from it: the
 * trace tree (src/trace/tree.ts), the OpenTelemetry spans
 * (src/telemetry/otel-sink.ts), the live terminal view (./live/) and the
 * page's timeline (src/server/page/timeline.js, which runs this same module
 * in the browser).
 *
 * Pure: no I/O, no clock (times are the events' own `ts`); its only value
 * imports are sibling modules that import no other value (./call-tracker.ts,
 * ./usage.ts), so its compiled JavaScript and theirs are served to the page
 * as they are. `apply` mutates the tree in place (a fold over thousands of
 * events stays linear) and returns the node the event opened, changed or
 * closed.
 */
import { CallTracker } from "./call-tracker.js";
import type { Container, Entry, ModelCall, RecursionNode, RunTree, StepNode, ToolCall } from "./run-tree.js";
import type { EventOf, RunEvent, TodoItem, Usage } from "./types.js";
import { addUsage } from "./usage.js";

export type { CallStatus, Entry, ModelCall, RecursionNode, RootEntry, RunEnd, RunTree, StepNode, ToolCall } from "./run-tree.js";

type Touched = StepNode | RecursionNode | ModelCall | ToolCall | RunTree;

const ZERO: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 };

/** The fold: `new RunProjection()`, `apply` each event in seq order, read `tree`. */
export class RunProjection {
  readonly tree: RunTree = {
    kind: "run",
    task_id: "",
    agent_id: "",
    input: "",
    started_at: "",
    last_at: "",
    last_seq: 0,
    events: 0,
    status: "running",
    roots: [],
    usage: ZERO,
    model_calls: 0,
    tool_calls: 0,
    plan_tasks: {},
    todos: {},
    pending_approvals: [],
  };
  private readonly steps = new Map<string, StepNode>();
  /** Where a step's events without a trace_id go: its latest recursion, or itself. */
  private readonly current = new Map<StepNode, Container>();
  private readonly recursions = new Map<string, RecursionNode>();
  private readonly calls = new CallTracker(this.tree);
  private readonly approvals = new Map<string, Extract<Entry, { kind: "approval" }>>();

  /** Fold one event in; returns the node it opened, changed or closed (the tree itself for run-level events). */
  apply(e: RunEvent): Touched | undefined {
    const t = this.tree;
    if (t.events === 0) {
      t.task_id = e.task_id;
      t.agent_id = e.agent_id;
      t.started_at = e.ts;
    }
    t.events += 1;
    t.last_at = e.ts;
    t.last_seq = e.seq;
    switch (e.type) {
      case "run.started":
        t.agent_id = e.agent_id;
        t.input = e.input;
        t.started_at = e.ts;
        if (e.session_id !== undefined) t.session_id = e.session_id;
        return t;
      case "run.resumed":
        if (t.input === "") t.input = e.input;
        if (t.end) t.roots.push({ kind: "stopped", end: t.end });
        delete t.end;
        t.status = "running";
        t.roots.push({ kind: "resumed", at: e.ts, after_seq: e.after_seq });
        return t;
      case "run.finished":
        return this.finishRun(e);
      case "agent.started":
        return this.startAgent(e);
      default:
        return this.inStep(e);
    }
  }

  private finishRun(e: EventOf<"run.finished">): RunTree {
    const t = this.tree;
    t.end = {
      result_type: e.result_type,
      at: e.ts,
      usage: e.usage,
      ...(e.answer !== undefined ? { answer: e.answer } : {}),
      ...(e.error !== undefined ? { error: e.error } : {}),
      ...(e.approvals ? { approvals: e.approvals } : {}),
      ...(e.budget ? { budget: e.budget } : {}),
    };
    t.status = e.result_type;
    this.calls.cutShort();
    return t;
  }

  private startAgent(e: EventOf<"agent.started">): StepNode {
    const step = this.stepOf(e);
    // A resumed run starts its steps again: the step keeps its first start.
    if (step.agent_kind === undefined) step.started_at = e.ts;
    step.agent_kind = e.kind;
    step.input = e.input;
    step.status = "running";
    return step;
  }

  private inStep(e: Exclude<RunEvent, EventOf<"run.started" | "run.resumed" | "run.finished" | "agent.started">>): Touched | undefined {
    const t = this.tree;
    const step = this.stepOf(e);
    const at = this.containerOf(step, e);
    switch (e.type) {
      case "agent.finished":
        return finishStep(step, e);
      case "state.changed":
        return changeState(step, at, e);
      case "recursion.started":
        step.iteration = e.iteration;
        if (at.kind === "recursion") at.iteration = e.iteration;
        return at;
      case "llm.request":
        return this.calls.openModel(step, at, e, {
          model: e.model,
          messages: e.messages,
        });
      case "llm.notice":
        this.notice(at, {
          kind: "notice",
          model: e.model,
          notice: e.notice,
          message: e.message,
        });
        // The model failed and the next of its fallbacks is asked: a new call, its model named by its reply.
        return e.notice === "fallback" ? this.calls.openModel(step, at, e, { fallback_from: e.model }) : step;
      case "context.compacted":
        this.notice(at, { kind: "notice", model: e.model, notice: "context", message: compactedText(e) });
        return step;
      case "llm.response":
      case "llm.error": {
        const call = this.calls.closeModel(step, at, e);
        if (e.type === "llm.response") {
          t.usage = addUsage(t.usage, e.usage);
          const text = e.thought ?? e.reasoning;
          if (text?.trim()) t.thought = { agent_id: e.agent_id, text };
        }
        return call;
      }
      case "llm.delta":
        return undefined;
      case "tool.progress":
        return this.calls.progressTool(step, e);
      case "tool.started":
        return this.calls.startTool(step, at, e);
      case "tool.finished":
        return this.calls.finishTool(step, at, e);
      case "plan.created":
      case "plan.updated":
        t.plan = { steps: e.steps, ...progressOf(e) };
        t.checklist = { source: "plan" };
        at.children.push({
          kind: "plan",
          steps: e.steps,
          updated: e.type === "plan.updated",
          ...progressOf(e),
        });
        return t;
      case "task.status":
        t.plan_tasks[e.plan_task_id] = e.status;
        t.plan_tool = { plan_id: e.plan_id, status: e.plan_status };
        if (t.plan) t.checklist = { source: "plan" };
        at.children.push({ kind: "task", plan_id: e.plan_id, plan_task_id: e.plan_task_id, status: e.status, plan_status: e.plan_status });
        return t;
      case "todo.updated":
      case "todo.completed":
      case "todo.item_progress":
        at.children.push({
          kind: "todo",
          event: e.type,
          session_id: e.session_id,
          version: e.version,
          ...(e.type === "todo.item_progress" ? { item: e.item } : { todos: e.todos }),
        });
        this.todo(step, e);
        return t;
      case "approval.requested":
        return this.approvalRequested(at, e);
      case "approval.decided":
        return this.approvalDecided(at, e);
      case "guardrail.passed":
      case "guardrail.tripped":
        at.children.push({
          kind: "guardrail",
          name: e.name,
          on: e.on,
          ...(e.tool !== undefined ? { tool: e.tool } : {}),
          passed: e.type === "guardrail.passed",
          ...(e.type === "guardrail.tripped" ? { action: e.action, reason: e.reason } : {}),
        });
        return step;
      case "answer.verified":
        at.children.push({ kind: "verified", method: e.method, verdict: e.verdict, problems: e.problems, round: e.round });
        return step;
    }
  }

  /** A call waiting for a person: an entry where it happened, and one more pending approval of the run. */
  private approvalRequested(at: Container, e: EventOf<"approval.requested">): RunTree {
    const t = this.tree;
    const entry = {
      kind: "approval" as const,
      approval_id: e.approval_id,
      tool: e.tool,
      call_id: e.call_id,
      arguments: e.arguments,
      decided: false,
      ...(e.in_doubt ? { in_doubt: true } : {}),
    };
    this.approvals.set(e.approval_id, entry);
    this.notice(at, entry);
    if (!t.pending_approvals.includes(e.approval_id)) t.pending_approvals = [...t.pending_approvals, e.approval_id];
    return t;
  }

  /** A person's decision on a call: an entry with the call's arguments, and one pending approval less. */
  private approvalDecided(at: Container, e: EventOf<"approval.decided">): RunTree {
    const t = this.tree;
    this.notice(at, {
      kind: "approval",
      approval_id: e.approval_id,
      tool: e.tool,
      call_id: e.call_id,
      arguments: this.approvals.get(e.approval_id)?.arguments,
      decided: true,
      decision: e.decision,
      ...(e.reason !== undefined ? { reason: e.reason } : {}),
    });
    t.pending_approvals = t.pending_approvals.filter((id) => id !== e.approval_id);
    return t;
  }

  /** A step by its key (`StepNode.id`). */
  step(id: string): StepNode | undefined {
    return this.steps.get(id);
  }

  /** A step's model and tool calls in flight, oldest first. */
  running(step: string): readonly (ModelCall | ToolCall)[] {
    return this.calls.running(step);
  }

  /** The step of an event, made on its first event (a resumed run's stream may begin in the middle). */
  private stepOf(e: RunEvent): StepNode {
    const key = e.step_id ?? `agent:${e.agent_id}`;
    let step = this.steps.get(key);
    if (step) return step;
    const parent = e.parent_step_id !== undefined ? this.steps.get(e.parent_step_id) : undefined;
    step = { kind: "step", id: key, agent_id: e.agent_id, started_at: e.ts, status: "running", steps: [], children: [] };
    if (e.step_id !== undefined) step.step_id = e.step_id;
    if (parent) {
      step.parent = parent.id;
      // An agent called as a tool: the oldest call of its name in the parent not yet claimed.
      const calling = [...this.running(parent.id)].find((c): c is ToolCall => c.kind === "tool" && c.tool === e.agent_id && c.called_steps.length === 0);
      if (calling) {
        step.called_by = calling.id;
        calling.called_steps.push(key);
      }
      parent.steps.push(key);
      (this.current.get(parent) ?? parent).children.push(step);
    } else {
      this.tree.roots.push(step);
    }
    this.steps.set(key, step);
    return step;
  }

  /** The container an event goes in: its recursion (opened on recursion.started or an unseen trace_id), else the step's latest. */
  private containerOf(step: StepNode, e: RunEvent): Container {
    const key = e.trace_id !== undefined ? `${step.id}/${e.trace_id}` : undefined;
    const known = key !== undefined ? this.recursions.get(key) : undefined;
    if (known) {
      known.last_at = e.ts;
      return known;
    }
    if (key === undefined && e.type !== "recursion.started") return this.current.get(step) ?? step;
    const rec: RecursionNode = { kind: "recursion", started_at: e.ts, last_at: e.ts, children: [] };
    if (e.trace_id !== undefined) rec.trace_id = e.trace_id;
    step.children.push(rec);
    this.current.set(step, rec);
    if (key !== undefined) this.recursions.set(key, rec);
    return rec;
  }

  /** Versioned todo deltas: one not newer than the last seen for its session is stale and dropped. */
  private todo(step: StepNode, e: EventOf<"todo.updated" | "todo.completed" | "todo.item_progress">): void {
    const seen = this.tree.todos[e.session_id];
    step.todo_session = e.session_id;
    if (seen && e.version <= seen.version) return;
    const todos = e.type === "todo.item_progress" ? upsertItem(seen?.todos ?? [], e.item) : e.todos;
    this.tree.todos[e.session_id] = { version: e.version, todos };
    this.tree.checklist = { source: "todos", session_id: e.session_id };
  }

  private notice(at: Container, entry: Extract<Entry, { kind: "notice" | "approval" }>): void {
    at.children.push(entry);
    this.tree.last_notice = entry;
  }
}

/** A `context.compacted` event in words, for every view of it. */
/** A step's end: its result, and its error as the step's last entry. */
function finishStep(step: StepNode, e: EventOf<"agent.finished">): StepNode {
  step.status = e.result_type;
  step.ended_at = e.ts;
  step.usage = e.usage;
  if (e.answer !== undefined) step.answer = e.answer;
  if (e.error !== undefined) {
    step.error = e.error;
    step.children.push({ kind: "error", error: e.error });
  }
  delete step.state;
  return step;
}

/** A machine's state change: the step's state, and a chain of changes of one machine as one entry (INIT → RECURSION → CALL_LLM). */
function changeState(step: StepNode, at: Container, e: EventOf<"state.changed">): StepNode {
  step.state = e.to;
  step.state_since = e.ts;
  const last = at.children.at(-1);
  const path = [...(e.via ?? []), e.to];
  if (last?.kind === "states" && last.machine === e.machine && last.path.at(-1) === e.from) last.path.push(...path);
  else at.children.push({ kind: "states", machine: e.machine, path: [e.from, ...path] });
  return step;
}

export function compactedText(e: EventOf<"context.compacted">): string {
  const what = [e.summarised ? `${e.summarised} older messages summarised` : "", e.trimmed ? `${e.trimmed} large messages trimmed` : ""]
    .filter(Boolean)
    .join(", ");
  return `context compacted for ${e.model}: ${e.tokens_before} → ${e.tokens_after} tokens (${what})`;
}

/** Fold a whole stream. */
export function project(events: Iterable<RunEvent>): RunTree {
  const projection = new RunProjection();
  for (const e of events) projection.apply(e);
  return projection.tree;
}

function upsertItem(todos: readonly TodoItem[], item: TodoItem): TodoItem[] {
  const next = todos.map((t) => (t.index === item.index ? item : t));
  if (!todos.some((t) => t.index === item.index)) next.push(item);
  return next.sort((a, b) => a.index - b.index);
}

/** A plan event's progress: how many steps are done, and which. */
function progressOf(e: EventOf<"plan.created" | "plan.updated">): { finished?: number; done?: number[] } {
  if (e.type !== "plan.updated") return {};
  return { ...(e.finished !== undefined ? { finished: e.finished } : {}), ...(e.done ? { done: e.done } : {}) };
}
