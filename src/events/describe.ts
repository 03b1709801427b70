/**
 * One event in one line of plain text: what MCP progress notifications, A2A
 * status messages, the terminal view and the page say of it. Pure, and it
 * imports no value but ./format.ts (which imports none), so the page runs
 * its compiled JavaScript as it is (src/server/page.ts).
 */
import { clip } from "./format.js";
import type { EventOf, RunEvent } from "./types.js";

/** The line for an event worth telling a person; undefined for the rest (streamed text, a model's reply). */
export function describeEvent(e: RunEvent): string | undefined {
  switch (e.type) {
    case "run.started":
      return "run started";
    case "run.resumed":
      return "run resumed";
    case "agent.started":
      return `${e.agent_id} started (${e.kind})`;
    case "agent.finished":
      return `${e.agent_id} ${e.result_type === "answer" ? "answered" : "failed"}`;
    case "state.changed":
      return `${e.agent_id}: ${e.to}`;
    case "recursion.started":
      return `${e.agent_id}: round ${e.iteration}`;
    case "llm.request":
      return `${e.agent_id} asks the model ${e.model}`;
    case "llm.error":
      return `${e.agent_id}: model error: ${clip(e.error, 240)}`;
    case "llm.notice":
      return `${e.agent_id}: notice: ${clip(e.message, 240)}`;
    case "tool.started":
      return `${e.agent_id} calls ${e.tool}`;
    case "tool.progress":
      return e.message !== undefined || e.progress !== undefined ? `${e.tool} … ${progressText(e)}` : undefined;
    case "tool.finished":
      return `${e.tool} ${e.ok ? "done" : "failed"}`;
    case "plan.created":
    case "plan.updated":
      return `plan: ${e.steps.length} step${e.steps.length === 1 ? "" : "s"}`;
    case "todo.updated":
    case "todo.completed": {
      const done = e.todos.filter((t) => t.status === "completed").length;
      return `todo list: ${done}/${e.todos.length} done`;
    }
    case "task.status":
      return `plan task ${e.plan_task_id}: ${e.status}`;
    case "approval.requested":
      return `${e.tool} waits for approval${e.in_doubt ? " (in doubt: it may have run)" : ""}`;
    case "approval.decided":
      return `${e.tool}: ${e.decision === "approve" ? "approved" : "denied"}${e.reason ? ` (${e.reason})` : ""}`;
    case "run.finished":
      return e.result_type === "answer" ? "run answered" : e.result_type === "paused" ? "run paused" : "run failed";
    default:
      return undefined;
  }
}

/** A tool's progress: `3/10 · reading`. */
export function progressText(e: EventOf<"tool.progress">): string {
  const count = e.progress === undefined ? undefined : e.total === undefined ? `${e.progress}` : `${e.progress}/${e.total}`;
  return [count, e.message !== undefined ? clip(e.message, 160) : undefined].filter((x) => x !== undefined).join(" · ");
}
