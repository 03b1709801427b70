/**
 * The run tree the projection (./projection.ts) folds a run's events into:
 * its types, and two readers of a tree (docs/design/projection.md).
 */
import type { ApprovalDecision, BudgetStatement, PendingApproval, PlanTaskStatus, TodoItem, Usage } from "./types.js";

/** A model or tool call in flight, done, failed, or cut short by the end of the run (`unfinished`). */
export type CallStatus = "running" | "ok" | "error" | "unfinished";

export interface ModelCall {
  kind: "model";
  /** `m1`, `m2`, ... in order of start: stable for one stream. */
  id: string;
  step: string;
  trace_id?: string;
  /** The recursion's number, when the call is inside one. */
  iteration?: number;
  /** The request's model; a fallback's is learnt from its reply. */
  model?: string;
  model_name?: string;
  /** The model this call falls back from (llm.notice `fallback`). */
  fallback_from?: string;
  messages?: number;
  /** When the call started: its llm.request, else its reply's time less its duration. */
  started_at: string;
  ended_at?: string;
  duration_ms?: number;
  status: CallStatus;
  usage?: Usage;
  /** `PLAN`, `CALL_TOOL`, ..., else `tool_calls` or `reply`. */
  action?: string;
  finish_reason?: string;
  reasoning?: string;
  thought?: string;
  content?: string;
  tool_calls?: { id: string; name: string; arguments: string }[];
  /** The server's error, or why a reply was refused (status `ok` with an error: refused and repaired). */
  error?: string;
}

export interface ToolCall {
  kind: "tool";
  /** `t1`, `t2`, ... in order of start. */
  id: string;
  step: string;
  trace_id?: string;
  iteration?: number;
  tool: string;
  call_id: string;
  arguments: unknown;
  started_at: string;
  ended_at?: string;
  duration_ms?: number;
  status: CallStatus;
  result?: unknown;
  error?: string;
  /** What the tool last told of its progress while it worked (`tool.progress`). */
  progress?: { message?: string; progress?: number; total?: number };
  /** Steps of the agent this call invoked (an agent called as a tool). */
  called_steps: string[];
}

export interface StepNode {
  kind: "step";
  /** The step's key: its step_id, or `agent:<agent_id>` for events without one. */
  id: string;
  step_id?: string;
  agent_id: string;
  agent_kind?: string;
  parent?: string;
  /** The tool call (its `id`) of the parent step that invoked this agent. */
  called_by?: string;
  input?: string;
  /** Its agent.started, else its first event. */
  started_at: string;
  ended_at?: string;
  status: "running" | "answer" | "error";
  answer?: string;
  error?: string;
  usage?: Usage;
  /** The machine state it is in, as the event says it (`RECURSION.CALL_LLM.OBSERVE`), and since when. */
  state?: string;
  state_since?: string;
  iteration?: number;
  /** The steps it called (their `id`s), in order of start; each is also an entry where it started. */
  steps: string[];
  /** The todo session this step last updated (its list is `tree.todos[todo_session]`). */
  todo_session?: string;
  /** Recursions, and the step's own entries outside any recursion, in order. */
  children: Entry[];
}

/** Where a step's entries go: the step itself, or one of its recursions. */
export type Container = StepNode | RecursionNode;

export interface RecursionNode {
  kind: "recursion";
  iteration?: number;
  trace_id?: string;
  started_at: string;
  /** The time of its last event. */
  last_at: string;
  children: Entry[];
}

/** What happens inside a step or recursion, in order. */
export type Entry =
  | StepNode
  | RecursionNode
  | ModelCall
  | ToolCall
  | { kind: "states"; machine: string; path: string[] }
  | { kind: "plan"; steps: string[]; finished?: number; done?: number[]; updated: boolean }
  | {
      kind: "todo";
      event: "todo.updated" | "todo.completed" | "todo.item_progress";
      session_id: string;
      version: number;
      todos?: TodoItem[];
      item?: TodoItem;
    }
  | { kind: "notice"; model: string; notice: string; message: string }
  | {
      kind: "approval";
      approval_id: string;
      tool: string;
      call_id: string;
      arguments: unknown;
      in_doubt?: boolean;
      decision?: ApprovalDecision;
      reason?: string;
      decided: boolean;
    }
  | { kind: "guardrail"; name: string; on: string; tool?: string; passed: boolean; action?: "block" | "redact" | "retry"; reason?: string }
  | {
      kind: "verified";
      method: string;
      verdict: "pass" | "fail" | "unclear";
      problems: string[];
      round: number;
    }
  | {
      kind: "task";
      plan_id: string;
      plan_task_id: string;
      status: PlanTaskStatus;
      plan_status: string;
    }
  | { kind: "error"; error: string };

/** How a run ended, before it was resumed or for good. */
export interface RunEnd {
  result_type: "answer" | "error" | "paused" | "blocked";
  at: string;
  answer?: string;
  error?: string;
  approvals?: PendingApproval[];
  usage: Usage;
  budget?: BudgetStatement;
}

/** Top-level entries: the steps without a parent, and where the run stopped and went on. */
export type RootEntry = StepNode | { kind: "stopped"; end: RunEnd } | { kind: "resumed"; at: string; after_seq: number };

export interface RunTree {
  kind: "run";
  task_id: string;
  agent_id: string;
  input: string;
  session_id?: string;
  /** run.started's time (else the first event's). */
  started_at: string;
  /** The latest event's time and seq. */
  last_at: string;
  last_seq: number;
  events: number;
  status: "running" | RunEnd["result_type"];
  /** The last run.finished (a resumed run's end before the resume is a `stopped` root). */
  end?: RunEnd;
  roots: RootEntry[];
  /** Summed over every model reply so far. */
  usage: Usage;
  model_calls: number;
  tool_calls: number;
  /** The latest plan (plan.created / plan.updated) and its Plan Tool task statuses. */
  plan?: { steps: string[]; finished?: number; done?: number[] };
  plan_tasks: Record<string, PlanTaskStatus>;
  /** The Plan Tool plan of the last task change, and its status then. */
  plan_tool?: { plan_id: string; status: string };
  /** Todo lists by session, each its newest version (stale versions are dropped). */
  todos: Record<string, { version: number; todos: TodoItem[] }>;
  /** Which of plan and todo lists changed last. */
  checklist?: { source: "plan" } | { source: "todos"; session_id: string };
  /** The latest thought (or reasoning) of a model reply, as it came. */
  thought?: { agent_id: string; text: string };
  /** Approval ids asked and not decided yet. */
  pending_approvals: string[];
  /** The latest notice or approval entry, for views that show one line of them. */
  last_notice?: Extract<Entry, { kind: "notice" | "approval" }>;
}

/** The steps of a tree, depth first in order of start. */
export function stepsOf(tree: RunTree): StepNode[] {
  const out: StepNode[] = [];
  const visit = (entries: readonly Entry[]) => {
    for (const entry of entries) {
      if (entry.kind === "step") {
        out.push(entry);
        visit(entry.children);
      } else if (entry.kind === "recursion") visit(entry.children);
    }
  };
  visit(tree.roots.filter((r): r is StepNode => r.kind === "step"));
  return out;
}

/** A step's own model and tool calls (not those of the agents it called), in order of start. */
export function callsOf(step: StepNode): (ModelCall | ToolCall)[] {
  const out: (ModelCall | ToolCall)[] = [];
  const visit = (entries: readonly Entry[]) => {
    for (const entry of entries) {
      if (entry.kind === "model" || entry.kind === "tool") out.push(entry);
      else if (entry.kind === "recursion") visit(entry.children);
    }
  };
  visit(step.children);
  return out;
}
