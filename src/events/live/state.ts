/**
 * The live view's state: the run's projection (src/events/projection.ts),
 * with the agent tree and what each agent is doing now, the plan or todo list
 * as a checklist, the last thought, the answer as it is written; and the
 * spend at the team's prices. The renderer (render.ts) draws it; nothing here
 * knows about terminals.
 */
import { oneLine } from "../format.js";
import { RunProjection, type RunTree, type StepNode } from "../projection.js";
import type { BudgetStatement, PlanTaskStatus, RunEvent, TodoStatus } from "../types.js";
import { costOf, type TokenPrice } from "../usage.js";

export type CheckMark = "done" | "active" | "pending" | "failed" | "skipped";

export interface CheckItem {
  text: string;
  mark: CheckMark;
}

/** What the checklist shows: the latest of the plan (plan.*, task.status) and the todo lists. */
export interface Checklist {
  title: string;
  items: readonly CheckItem[];
}

/** What the view is told besides the events. */
export interface ViewConfig {
  /** The team's budget (docs/budgets.md): each limit, by the names of a budget statement. */
  budget?: { [limit in keyof BudgetStatement]?: number };
  /** The price of the model that answered a call, when it has one. */
  priceOf?: (agent_id: string, model_name: string | undefined) => TokenPrice | undefined;
}

/** The run's projection, what its model calls cost at the prices given, and its answer as it is written. */
export class LiveState {
  readonly projection = new RunProjection();
  /** US dollars, at the prices the view was given. */
  cost = 0;
  /**
   * The entry agent's answer so far, while its model writes it: not an
   * event's, but what the one reader of an answer in the making
   * (src/kinds/answer-text.ts) made of the events (docs/cli.md#watching-a-run).
   */
  answer = "";

  constructor(readonly config: ViewConfig = {}) {}

  get run(): RunTree {
    return this.projection.tree;
  }

  apply(e: RunEvent): this {
    this.projection.apply(e);
    if (e.type === "llm.response") {
      const price = this.config.priceOf?.(e.agent_id, e.model_name);
      this.cost += costOf(e.usage, price);
    }
    // What the run says it spent against its budget at the end is the figure to show.
    if (e.type === "run.finished" && e.budget?.max_cost_usd) this.cost = e.budget.max_cost_usd.spent;
    return this;
  }
}

/** Fold a whole stream of events. */
export function viewOf(events: Iterable<RunEvent>, config: ViewConfig = {}): LiveState {
  const state = new LiveState(config);
  for (const e of events) state.apply(e);
  return state;
}

/** `RECURSION.CALL_LLM.OBSERVE` → `OBSERVE`; two-level names (`SOLVING.ExecuteTool`) stay whole. */
export function shortState(state: string): string {
  const parts = state.split(".");
  return parts.length > 2 ? (parts[parts.length - 1] ?? state) : state;
}

/** The agents the view shows: steps of a step_id (events from outside any agent make none). */
export function agentRoots(run: RunTree): StepNode[] {
  return run.roots.filter((r): r is StepNode => r.kind === "step" && r.step_id !== undefined);
}

/** The latest notice, as one line. */
export function noticeOf(run: RunTree): string | undefined {
  const n = run.last_notice;
  if (!n) return undefined;
  if (n.kind === "notice") return oneLine(n.message);
  return n.decided ? `${n.tool} ${n.decision === "approve" ? "approved" : "denied"}` : `${n.tool} waits for approval`;
}

const TODO_MARK: Record<TodoStatus, CheckMark> = {
  pending: "pending",
  in_progress: "active",
  completed: "done",
  failed: "failed",
  blocked: "failed",
  skipped: "skipped",
};

const TASK_MARK: Record<PlanTaskStatus, CheckMark> = {
  ready: "pending",
  inprogress: "active",
  completed: "done",
  error: "failed",
  skipped: "skipped",
};

/** A Plan Tool step line (`s1/t2 Identify hazards → analyst`, src/kinds/sop) names its task id. */
const PLAN_TASK_STEP = /^[^\s/]+\/(\S+)\s/;

/** The checklist to show, or none. */
export function checklistOf(state: LiveState): Checklist | undefined {
  const run = state.run;
  const source = run.checklist;
  const list = source?.source === "todos" ? run.todos[source.session_id] : undefined;
  if (list) {
    const todos = list.todos;
    const done = todos.filter((t) => t.status === "completed" || t.status === "skipped").length;
    return {
      title: `todo ${done}/${todos.length}`,
      items: todos.map((t) => ({ text: oneLine(t.content), mark: TODO_MARK[t.status] ?? "pending" })),
    };
  }
  const plan = run.plan;
  if (!plan) return undefined;
  const running = run.status === "running";
  const firstOpen = plan.done ? plan.steps.findIndex((_, i) => !plan.done?.includes(i + 1)) : (plan.finished ?? -1);
  const items = plan.steps.map((step, i): CheckItem => {
    const task = PLAN_TASK_STEP.exec(step)?.[1];
    const status = task !== undefined ? run.plan_tasks[task] : undefined;
    if (status !== undefined) return { text: oneLine(step), mark: TASK_MARK[status] };
    // Steps done in any order (plan.updated's `done`), else the first `finished` ones.
    const done = plan.done ? plan.done.includes(i + 1) : plan.finished !== undefined && i < plan.finished;
    if (done) return { text: oneLine(step), mark: "done" };
    if (running && plan.finished !== undefined && i === firstOpen) return { text: oneLine(step), mark: "active" };
    return { text: oneLine(step), mark: "pending" };
  });
  const done = items.filter((i) => i.mark === "done" || i.mark === "skipped").length;
  return { title: `plan ${done}/${items.length}`, items };
}
