/**
 * What a test case checks, read from the run's projection (the one fold of
 * its events, src/events/projection.ts): how it ended, the tool calls of
 * every agent in the order they started, the last todo list and plan, and
 * what the run spent.
 */
import { project } from "../events/projection.js";
import { callsOf, stepsOf, type ToolCall } from "../events/run-tree.js";
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

/** A run's events as the expectations read them. */
export function observe(events: readonly RunEvent[]): Observed {
  const tree = project(events);
  // Every step's calls, in the order they started (`m1`, `t2`, ... share one count).
  const calls = stepsOf(tree)
    .flatMap((step) => callsOf(step).map((call) => ({ agent: step.agent_id, call })))
    .sort((a, b) => Number(a.call.id.slice(1)) - Number(b.call.id.slice(1)));
  const replies = calls.flatMap(({ call }) => (call.kind === "model" && call.usage ? [{ model: call.model ?? "", usage: call.usage }] : []));
  const todoSession = tree.checklist?.source === "todos" ? tree.checklist.session_id : Object.keys(tree.todos).at(-1);
  const todos = todoSession !== undefined ? tree.todos[todoSession]?.todos : undefined;
  const end = tree.end;
  return {
    result_type: end?.result_type ?? "none",
    ...(end?.answer !== undefined ? { answer: end.answer } : {}),
    ...(end?.error !== undefined ? { error: end.error } : {}),
    tool_calls: calls.flatMap(({ agent, call }) => (call.kind === "tool" ? [observedCall(agent, call)] : [])),
    ...(todos ? { todos: todos.map((item) => ({ ...item })) } : {}),
    plan: {
      ...(tree.plan ? { steps: [...tree.plan.steps] } : {}),
      ...(tree.plan?.finished !== undefined ? { finished: tree.plan.finished } : {}),
      ...(tree.plan_tool ? { status: tree.plan_tool.status } : {}),
      tasks: { ...tree.plan_tasks },
    },
    model_calls: replies.length,
    tokens: end?.usage.total_tokens ?? 0,
    replies,
  };
}

function observedCall(agent: string, call: ToolCall): ObservedCall {
  return {
    agent,
    name: call.tool,
    call_id: call.call_id,
    // Arguments that did not parse reach the event as their text; compare them as the model meant them when possible.
    arguments: typeof call.arguments === "string" ? (parseObject(call.arguments) ?? call.arguments) : call.arguments,
    ...(call.status === "ok" ? { result: call.result } : {}),
    ...(call.status === "error" ? { error: call.error ?? "failed" } : {}),
  };
}
