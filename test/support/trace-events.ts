/** Realistic event sequences built through the real EventBus, with a fake clock. */
import { EventBus } from "../../src/events/bus.js";
import type { EventScope, RunEvent, RunEventBody, TodoItem } from "../../src/events/types.js";

/** A clock that advances `stepMs` per reading, from a fixed start. */
export function steppingClock(startIso = "2025-03-01T10:00:00.000Z", stepMs = 100): () => Date {
  let t = Date.parse(startIso);
  return () => {
    const d = new Date(t);
    t += stepMs;
    return d;
  };
}

const usage = (p: number, c: number) => ({ prompt_tokens: p, completion_tokens: c, total_tokens: p + c });

/**
 * A react run of the circle question: solver calls calculator twice (one call
 * fails and is repaired), delegates to a nested `helper` agent, and answers.
 */
export function circleReactRun(taskId = "task-circle", bus = new EventBus(taskId, steppingClock())): RunEvent[] {
  const out: RunEvent[] = [];
  bus.subscribe((e) => out.push(e));
  const s: EventScope = { agent_id: "solver", step_id: "s1" };
  const at = (trace_id: string): EventScope => ({ ...s, trace_id });
  const emit = (body: RunEventBody, scope: EventScope) => bus.emit(body, scope);

  emit({ type: "run.started", input: "What are the area and circumference of a circle with radius 5?" }, { agent_id: "solver" });
  emit({ type: "agent.started", kind: "react", input: "What are the area and circumference of a circle with radius 5?" }, s);
  emit({ type: "state.changed", machine: "react", from: "INIT", to: "RECURSION" }, s);
  emit({ type: "recursion.started", iteration: 1 }, at("tr-1"));
  emit({ type: "state.changed", machine: "react", from: "RECURSION", to: "INPUT" }, at("tr-1"));
  emit({ type: "state.changed", machine: "react", from: "INPUT", to: "CALL_LLM" }, at("tr-1"));
  emit({ type: "llm.request", model: "gpt-4o-mini", messages: 2 }, at("tr-1"));
  emit(
    {
      type: "llm.response",
      model: "gpt-4o-mini",
      usage: usage(300, 40),
      duration_ms: 812,
      action_type: "PLAN",
      thought: "I need a plan first.",
    },
    at("tr-1"),
  );
  emit({ type: "plan.created", steps: ["Compute the area", "Compute the circumference", "Answer"] }, at("tr-1"));
  emit({ type: "recursion.started", iteration: 2 }, at("tr-2"));
  emit({ type: "llm.request", model: "gpt-4o-mini", messages: 3 }, at("tr-2"));
  emit(
    {
      type: "llm.response",
      model: "gpt-4o-mini",
      usage: usage(350, 30),
      duration_ms: 640,
      action_type: "CALL_TOOL",
      tool_calls: [
        { id: "c1", name: "calculator", arguments: '{"expression":"pi * 5^2"}' },
        { id: "c2", name: "calculator", arguments: '{"expression":"2 * pi * 5 +"}' },
      ],
    },
    at("tr-2"),
  );
  emit({ type: "tool.started", tool: "calculator", call_id: "c1", arguments: { expression: "pi * 5^2" } }, at("tr-2"));
  emit({ type: "tool.started", tool: "calculator", call_id: "c2", arguments: { expression: "2 * pi * 5 +" } }, at("tr-2"));
  emit(
    { type: "tool.finished", tool: "calculator", call_id: "c1", arguments: { expression: "pi * 5^2" }, ok: true, result: "78.54", duration_ms: 3 },
    at("tr-2"),
  );
  emit(
    {
      type: "tool.finished",
      tool: "calculator",
      call_id: "c2",
      arguments: { expression: "2 * pi * 5 +" },
      ok: false,
      error: "Unexpected end of expression (char 12)",
      duration_ms: 2,
    },
    at("tr-2"),
  );
  emit({ type: "plan.updated", steps: ["Compute the area", "Compute the circumference", "Answer"], finished: 1 }, at("tr-2"));
  emit({ type: "recursion.started", iteration: 3 }, at("tr-3"));
  emit({ type: "llm.request", model: "gpt-4o-mini", messages: 4 }, at("tr-3"));
  emit({ type: "llm.response", model: "gpt-4o-mini", usage: usage(400, 20), duration_ms: 500, action_type: "CALL_TOOL" }, at("tr-3"));
  emit({ type: "tool.started", tool: "helper", call_id: "c3", arguments: { query: "circumference of r=5" } }, at("tr-3"));
  const h: EventScope = { agent_id: "helper", step_id: "s2", parent_step_id: "s1" };
  emit({ type: "agent.started", kind: "react", input: "circumference of r=5" }, h);
  emit({ type: "recursion.started", iteration: 1 }, { ...h, trace_id: "tr-h1" });
  emit({ type: "llm.response", model: "gpt-4o-mini", usage: usage(100, 10), duration_ms: 300, action_type: "ANSWER" }, { ...h, trace_id: "tr-h1" });
  emit({ type: "agent.finished", result_type: "answer", answer: "31.42", usage: usage(100, 10) }, h);
  emit(
    { type: "tool.finished", tool: "helper", call_id: "c3", arguments: { query: "circumference of r=5" }, ok: true, result: "31.42", duration_ms: 450 },
    at("tr-3"),
  );
  emit({ type: "recursion.started", iteration: 4 }, at("tr-4"));
  emit({ type: "llm.response", model: "gpt-4o-mini", usage: usage(450, 25), duration_ms: 700, action_type: "ANSWER" }, at("tr-4"));
  emit({ type: "state.changed", machine: "react", from: "RECURSION", to: "RESULT_TYPE" }, s);
  const answer = "Area: 78.54 m², circumference: 31.42 m.";
  const total = usage(1600, 125);
  emit({ type: "agent.finished", result_type: "answer", answer, usage: total }, s);
  emit({ type: "run.finished", result_type: "answer", answer, usage: total }, { agent_id: "solver" });
  return out;
}

export function todo(index: number, content: string, status: TodoItem["status"], tool_calls_count = 0): TodoItem {
  return { index, content, status, tool_calls_count };
}

/** A plan_and_solve run whose todo list changes, then which fails. */
export function todoRun(taskId = "task-todo", bus = new EventBus(taskId, steppingClock())): RunEvent[] {
  const out: RunEvent[] = [];
  bus.subscribe((e) => out.push(e));
  const s: EventScope = { agent_id: "planner", step_id: "p1" };
  bus.emit({ type: "run.started", input: "circle" }, { agent_id: "planner" });
  bus.emit({ type: "agent.started", kind: "plan_and_solve", input: "circle" }, s);
  bus.emit({ type: "state.changed", machine: "plan_and_solve", from: "IDLE", to: "PLANNING" }, s);
  bus.emit({ type: "todo.updated", session_id: "sess", version: 1, todos: [todo(1, "Look up formula", "pending"), todo(2, "Compute area", "pending")] }, s);
  bus.emit({ type: "todo.item_progress", session_id: "sess", version: 2, item: todo(1, "Look up formula", "in_progress") }, s);
  bus.emit({ type: "todo.item_progress", session_id: "sess", version: 3, item: todo(1, "Look up formula", "completed", 1) }, s);
  bus.emit({ type: "todo.item_progress", session_id: "sess", version: 4, item: todo(2, "Compute area", "blocked", 2) }, s);
  bus.emit({ type: "task.status", plan_id: "plan-1", plan_task_id: "t1", status: "error", plan_status: "error" }, s);
  bus.emit({ type: "llm.error", model: "gpt-4o-mini", error: "429 Too Many Requests" }, s);
  bus.emit({ type: "agent.finished", result_type: "error", error: "max_iteration 4 reached", usage: usage(10, 5) }, s);
  bus.emit({ type: "run.finished", result_type: "error", error: "max_iteration 4 reached", usage: usage(10, 5) }, { agent_id: "planner" });
  return out;
}
