/**
 * What a test case checks, read from a run's events: how it ended, the tool
 * calls of every agent in the order they started, the last todo list and
 * plan, and what the run spent.
 */
import type { RunEvent, TodoItem, Usage } from "../events/types.js";
import { parseObject } from "../parse/json.js";

export interface ObservedCall {
  agent: string;
  name: string;
  call_id: string;
  arguments: unknown;
  /** Its result, or its error, once it finished. */
  result?: unknown;
  error?: string;
}

export interface Observed {
  result_type: "answer" | "error" | "paused" | "blocked" | "none";
  answer?: string;
  error?: string;
  tool_calls: ObservedCall[];
  /** The todo list after its last change; undefined when the run had none. */
  todos?: TodoItem[];
  plan: {
    steps?: string[];
    finished?: number;
    /** The Plan Tool plan's status after its last task change. */
    status?: string;
    tasks: Record<string, string>;
  };
  model_calls: number;
  tokens: number;
  /** Each model reply's usage, by the model (its id on the wire) that gave it. */
  replies: Array<{ model: string; usage: Usage }>;
}

/** Folds a run's events into what the expectations read. */
export function observe(events: readonly RunEvent[]): Observed {
  const out: Observed = { result_type: "none", tool_calls: [], plan: { tasks: {} }, model_calls: 0, tokens: 0, replies: [] };
  for (const e of events) {
    switch (e.type) {
      case "llm.response":
        out.model_calls += 1;
        out.replies.push({ model: e.model, usage: e.usage });
        break;
      case "tool.started":
        out.tool_calls.push({
          agent: e.agent_id,
          name: e.tool,
          call_id: e.call_id,
          // Arguments that did not parse reach the event as their text; compare them as the model meant them when possible.
          arguments: typeof e.arguments === "string" ? (parseObject(e.arguments) ?? e.arguments) : e.arguments,
        });
        break;
      case "tool.finished": {
        const call = out.tool_calls.findLast((c) => c.call_id === e.call_id);
        if (call && e.ok) call.result = e.result;
        else if (call) call.error = e.error ?? "failed";
        break;
      }
      case "todo.updated":
      case "todo.completed":
        out.todos = e.todos.map((item) => ({ ...item }));
        break;
      case "todo.item_progress": {
        const list = out.todos ?? [];
        const at = list.findIndex((item) => item.index === e.item.index);
        if (at === -1) list.push({ ...e.item });
        else list[at] = { ...e.item };
        out.todos = list;
        break;
      }
      case "plan.created":
        out.plan.steps = [...e.steps];
        delete out.plan.finished;
        break;
      case "plan.updated":
        out.plan.steps = [...e.steps];
        if (e.finished !== undefined) out.plan.finished = e.finished;
        break;
      case "task.status":
        out.plan.tasks[e.plan_task_id] = e.status;
        out.plan.status = e.plan_status;
        break;
      case "run.finished":
        out.result_type = e.result_type;
        if (e.answer !== undefined) out.answer = e.answer;
        if (e.error !== undefined) out.error = e.error;
        out.tokens = e.usage.total_tokens;
        break;
      default:
        break;
    }
  }
  return out;
}
