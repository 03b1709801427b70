/**
 * The live view's state, folded from the run's events by a pure reducer
 * (`reduceView`): the agent tree with what each agent is doing now, the plan
 * or todo list as a checklist, the last thought and the spend. The renderer
 * (render.ts) draws it; nothing here knows about terminals.
 */
import type { Budget } from "../../config/types.js";
import { oneLine } from "../format.js";
import type { BudgetStatement, PlanTaskStatus, RunEvent, TodoItem, TodoStatus, Usage } from "../types.js";
import { ZERO_USAGE, addUsage } from "../types.js";

/** One agent invocation (a step): the entry agent, or an agent it called. */
export interface AgentNode {
  step_id: string;
  agent_id: string;
  kind?: string;
  parent?: string;
  children: readonly string[];
  startedMs: number;
  finishedMs?: number;
  result?: "answer" | "error";
  /** The machine state it is in now, shortened (`CALL_TOOL`, `SOLVING.ExecuteTool`). */
  state?: string;
  stateSinceMs?: number;
  iteration?: number;
  /** A model call in flight: since when. */
  modelSinceMs?: number;
  /** Tool calls in flight, by call id. */
  tools: Readonly<Record<string, { tool: string; sinceMs: number }>>;
}

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

export interface ViewState {
  startedMs?: number;
  finishedMs?: number;
  agents: Readonly<Record<string, AgentNode>>;
  /** Steps without a known parent, in order of start. */
  roots: readonly string[];
  plan?: { steps: readonly string[]; finished?: number };
  /** Plan Tool task statuses by plan task id (sop runs). */
  planTasks: Readonly<Record<string, PlanTaskStatus>>;
  todos?: { session_id: string; version: number; todos: readonly TodoItem[] };
  /** Which of plan and todos changed last: that is the checklist shown. */
  checklistSource?: "plan" | "todos";
  thought?: { agent_id: string; text: string };
  usage: Usage;
  modelCalls: number;
  toolCalls: number;
  /** US dollars, at the prices the view was given. */
  cost: number;
  /** The team's budget, when it has one (docs/budgets.md). */
  budget?: Budget;
  /** Spend against the budget as the run reported it at the end. */
  statement?: BudgetStatement;
  outcome?: "answer" | "error" | "paused";
  /** Warnings and approvals, the latest last (the last few only: one is shown). */
  notices: readonly string[];
  /** Approvals asked and not yet decided: while there is one, a person is being asked on the terminal. */
  pendingApprovals: readonly string[];
}

/** What the view is told besides the events. */
export interface ViewConfig {
  budget?: Budget;
  /** The price of the model that answered a call, when it has one. */
  priceOf?: (agent_id: string, model_name: string | undefined) => { input_per_mtok: number; output_per_mtok: number } | undefined;
}

export function initialView(config: ViewConfig = {}): ViewState {
  return {
    agents: {},
    roots: [],
    planTasks: {},
    usage: ZERO_USAGE,
    modelCalls: 0,
    toolCalls: 0,
    cost: 0,
    notices: [],
    pendingApprovals: [],
    ...(config.budget ? { budget: config.budget } : {}),
  };
}

/** `RECURSION.CALL_LLM.OBSERVE` → `OBSERVE`; two-level names (`SOLVING.ExecuteTool`) stay whole. */
export function shortState(state: string): string {
  const parts = state.split(".");
  return parts.length > 2 ? (parts[parts.length - 1] ?? state) : state;
}

/** The view after one event. Never mutates `view`. */
export function reduceView(view: ViewState, e: RunEvent, config: ViewConfig = {}): ViewState {
  const at = Date.parse(e.ts);
  switch (e.type) {
    case "run.started":
    case "run.resumed":
      return { ...view, startedMs: view.startedMs ?? at };
    case "agent.started": {
      if (e.step_id === undefined) return view;
      const node: AgentNode = {
        step_id: e.step_id,
        agent_id: e.agent_id,
        kind: e.kind,
        children: [],
        startedMs: at,
        tools: {},
        ...(e.parent_step_id !== undefined ? { parent: e.parent_step_id } : {}),
      };
      const agents = { ...view.agents, [e.step_id]: node };
      const parent = e.parent_step_id !== undefined ? agents[e.parent_step_id] : undefined;
      if (parent) {
        agents[parent.step_id] = { ...parent, children: [...parent.children, e.step_id] };
        return { ...view, startedMs: view.startedMs ?? at, agents };
      }
      return { ...view, startedMs: view.startedMs ?? at, agents, roots: [...view.roots, e.step_id] };
    }
    case "agent.finished":
      return patchAgent(view, e, { finishedMs: at, result: e.result_type, tools: {}, modelSinceMs: undefined });
    case "state.changed":
      return patchAgent(view, e, { state: shortState(e.to), stateSinceMs: at });
    case "recursion.started":
      return patchAgent(view, e, { iteration: e.iteration });
    case "llm.request":
      return patchAgent(view, e, { modelSinceMs: at });
    case "llm.response": {
      const price = config.priceOf?.(e.agent_id, e.model_name);
      const cost = price ? (e.usage.prompt_tokens * price.input_per_mtok + e.usage.completion_tokens * price.output_per_mtok) / 1_000_000 : 0;
      const text = e.thought ?? e.reasoning;
      const next = patchAgent(view, e, { modelSinceMs: undefined });
      return {
        ...next,
        usage: addUsage(view.usage, e.usage),
        modelCalls: view.modelCalls + 1,
        cost: view.cost + cost,
        ...(text && oneLine(text) ? { thought: { agent_id: e.agent_id, text: oneLine(text) } } : {}),
      };
    }
    case "llm.error":
      return { ...patchAgent(view, e, { modelSinceMs: undefined }), modelCalls: view.modelCalls + 1 };
    case "llm.notice":
      return { ...view, notices: noted(view, oneLine(e.message)) };
    case "tool.started": {
      const node = nodeOf(view, e);
      const next = node ? patchAgent(view, e, { tools: { ...node.tools, [e.call_id]: { tool: e.tool, sinceMs: at } } }) : view;
      return { ...next, toolCalls: view.toolCalls + 1 };
    }
    case "tool.finished": {
      const node = nodeOf(view, e);
      if (!node || !(e.call_id in node.tools)) return view;
      const tools = { ...node.tools };
      delete tools[e.call_id];
      return patchAgent(view, e, { tools });
    }
    case "plan.created":
      return { ...view, plan: { steps: e.steps }, checklistSource: "plan" };
    case "plan.updated":
      return { ...view, plan: { steps: e.steps, ...(e.finished !== undefined ? { finished: e.finished } : {}) }, checklistSource: "plan" };
    case "task.status":
      return { ...view, planTasks: { ...view.planTasks, [e.plan_task_id]: e.status }, checklistSource: view.plan ? "plan" : view.checklistSource };
    case "todo.updated":
    case "todo.completed":
    case "todo.item_progress": {
      const seen = view.todos;
      // Versioned deltas: one not newer than the last seen for the session is stale.
      if (seen && seen.session_id === e.session_id && e.version <= seen.version) return view;
      const todos = e.type === "todo.item_progress" ? upsertItem(seen?.session_id === e.session_id ? seen.todos : [], e.item) : e.todos;
      return { ...view, todos: { session_id: e.session_id, version: e.version, todos }, checklistSource: "todos" };
    }
    case "approval.requested":
      return { ...view, notices: noted(view, `${e.tool} waits for approval`), pendingApprovals: [...view.pendingApprovals, e.approval_id] };
    case "approval.decided":
      return {
        ...view,
        notices: noted(view, `${e.tool} ${e.decision === "approve" ? "approved" : "denied"}`),
        pendingApprovals: view.pendingApprovals.filter((id) => id !== e.approval_id),
      };
    case "run.finished":
      return {
        ...view,
        finishedMs: at,
        outcome: e.result_type,
        ...(e.budget ? { statement: e.budget } : {}),
        ...(e.budget?.max_cost_usd ? { cost: e.budget.max_cost_usd.spent } : {}),
      };
    case "llm.delta":
    case "answer.verified":
      return view;
  }
}

/** Fold a whole stream of events. */
export function viewOf(events: Iterable<RunEvent>, config: ViewConfig = {}): ViewState {
  let view = initialView(config);
  for (const e of events) view = reduceView(view, e, config);
  return view;
}

function noted(view: ViewState, notice: string): readonly string[] {
  return [...view.notices.slice(-4), notice];
}

function nodeOf(view: ViewState, e: RunEvent): AgentNode | undefined {
  return e.step_id === undefined ? undefined : view.agents[e.step_id];
}

/** A step seen only from the middle (a resumed run) gets a node of its own on its first event. */
function patchAgent(view: ViewState, e: RunEvent, patch: Partial<AgentNode>): ViewState {
  if (e.step_id === undefined) return view;
  let base = view.agents[e.step_id];
  let roots = view.roots;
  if (!base) {
    base = { step_id: e.step_id, agent_id: e.agent_id, children: [], startedMs: Date.parse(e.ts), tools: {} };
    roots = [...roots, e.step_id];
  }
  const node = { ...base, ...patch } as AgentNode;
  for (const key of Object.keys(patch) as (keyof AgentNode)[]) if (patch[key] === undefined) delete node[key];
  return { ...view, roots, agents: { ...view.agents, [e.step_id]: node } };
}

function upsertItem(todos: readonly TodoItem[], item: TodoItem): TodoItem[] {
  const next = todos.map((t) => (t.index === item.index ? item : t));
  if (!todos.some((t) => t.index === item.index)) next.push(item);
  return next.sort((a, b) => a.index - b.index);
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
export function checklistOf(view: ViewState): Checklist | undefined {
  if (view.checklistSource === "todos" && view.todos) {
    const todos = view.todos.todos;
    const done = todos.filter((t) => t.status === "completed" || t.status === "skipped").length;
    return {
      title: `todo ${done}/${todos.length}`,
      items: todos.map((t) => ({ text: oneLine(t.content), mark: TODO_MARK[t.status] ?? "pending" })),
    };
  }
  const plan = view.plan;
  if (!plan) return undefined;
  const running = view.outcome === undefined;
  const items = plan.steps.map((step, i): CheckItem => {
    const task = PLAN_TASK_STEP.exec(step)?.[1];
    const status = task !== undefined ? view.planTasks[task] : undefined;
    if (status !== undefined) return { text: oneLine(step), mark: TASK_MARK[status] };
    if (plan.finished !== undefined) {
      if (i < plan.finished) return { text: oneLine(step), mark: "done" };
      if (i === plan.finished && running) return { text: oneLine(step), mark: "active" };
    }
    return { text: oneLine(step), mark: "pending" };
  });
  const done = items.filter((i) => i.mark === "done" || i.mark === "skipped").length;
  return { title: `plan ${done}/${items.length}`, items };
}
