import { setup, transition } from "xstate";
import type { TodoStatus } from "../../events/types.js";

/** Events that move one todo item between the states of docs/design/plan-and-solve-design.md diagram 2. */
export type TaskEvent = { type: "START" } | { type: "COMPLETE" } | { type: "FAIL" } | { type: "BLOCK" } | { type: "RETRY" } | { type: "SKIP" };

/**
 * One todo item's life, docs/design/plan-and-solve-design.md diagram 2 plus BLOCKED from docs/design/todo-list-design.md.
 * Beyond the diagram: BLOCKED behaves like FAILED (retry or skip), and any
 * open item may be skipped, because dropping a task that turned out to be
 * unnecessary is a legitimate decision (and closing open items on an early
 * terminate needs it). COMPLETED and SKIPPED are final.
 */
export const taskMachine = setup({
  types: { events: {} as TaskEvent },
}).createMachine({
  id: "task",
  initial: "PENDING",
  states: {
    PENDING: { on: { START: "IN_PROGRESS", SKIP: "SKIPPED" } },
    IN_PROGRESS: {
      on: { COMPLETE: "COMPLETED", FAIL: "FAILED", BLOCK: "BLOCKED", SKIP: "SKIPPED" },
    },
    FAILED: { on: { RETRY: "IN_PROGRESS", SKIP: "SKIPPED" } },
    BLOCKED: { on: { RETRY: "IN_PROGRESS", SKIP: "SKIPPED" } },
    COMPLETED: { type: "final" },
    SKIPPED: { type: "final" },
  },
});

const STATE_OF: Record<TodoStatus, string> = {
  pending: "PENDING",
  in_progress: "IN_PROGRESS",
  completed: "COMPLETED",
  failed: "FAILED",
  skipped: "SKIPPED",
  blocked: "BLOCKED",
};

/** Statuses after which an item needs no more work. */
export function isTerminal(status: TodoStatus): boolean {
  return status === "completed" || status === "skipped";
}

export type TaskTransition = { ok: true; changed: boolean } | { ok: false; reason: string };

/**
 * Whether an item may go from `from` to `to`, decided by the task machine
 * itself. The same status is accepted as a no-op, so a model confirming
 * what the automatic tracking already did is not scolded for it.
 */
export function checkTransition(from: TodoStatus, to: TodoStatus): TaskTransition {
  if (from === to) return { ok: true, changed: false };
  const event = eventFor(from, to);
  if (event) {
    const snapshot = taskMachine.resolveState({ value: STATE_OF[from] });
    const [next] = transition(taskMachine, snapshot, event);
    if (next.value === STATE_OF[to]) return { ok: true, changed: true };
  }
  return { ok: false, reason: refusal(from, to) };
}

function eventFor(from: TodoStatus, to: TodoStatus): TaskEvent | undefined {
  switch (to) {
    case "in_progress":
      return from === "pending" ? { type: "START" } : { type: "RETRY" };
    case "completed":
      return { type: "COMPLETE" };
    case "failed":
      return { type: "FAIL" };
    case "blocked":
      return { type: "BLOCK" };
    case "skipped":
      return { type: "SKIP" };
    case "pending":
      return undefined;
  }
}

function refusal(from: TodoStatus, to: TodoStatus): string {
  if (isTerminal(from)) return `it is already ${from}, which is final`;
  if (to === "pending") return `an item cannot go back to pending once it is ${from}`;
  if (from === "pending") return `it is still pending: mark it in_progress before marking it ${to}`;
  return `it is ${from}: set it to in_progress to retry it, or skipped to give it up`;
}
