import { createMachine } from "xstate";
import { TRANSITIONS } from "../plan/transitions.js";
import type { TaskStatus } from "../plan/types.js";

/**
 * The Plan Tool's task lifecycle (docs/design/plan-tool-design.md) as a machine built from the very
 * transition table `update_task_status` enforces, so the drawing is the rule.
 * Events are named after the target status (`to_inprogress`, ...).
 */
export const planTaskMachine = createMachine({
  id: "plan_tool_task",
  initial: "ready",
  states: Object.fromEntries(
    (Object.keys(TRANSITIONS) as TaskStatus[]).map((from) => {
      const targets = TRANSITIONS[from];
      return [from, targets.length === 0 ? { type: "final" as const } : { on: Object.fromEntries(targets.map((to) => [`to_${to}`, { target: to }])) }];
    }),
  ),
});
