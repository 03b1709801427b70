import type { AnyStateMachine } from "xstate";
import { taskMachine } from "../kinds/plan-and-solve/task-machine.js";
import { KINDS } from "../kinds/registry.js";
import { planTaskMachine } from "./plan-task-machine.js";

/**
 * Every machine `runtime graph --machine NAME` can draw, by name: each kind's
 * machine from the registry (src/kinds/registry.ts), under the kind's name,
 * and the two task-state machines.
 */
export const MACHINES: Record<string, { machine: AnyStateMachine; title: string }> = {
  // Kinds load their code on first use; drawing them all needs them all.
  ...Object.fromEntries(await Promise.all(Object.values(KINDS).map(async (k) => [k.kind, { machine: (await k.load()).machine, title: k.title }]))),
  task: { machine: taskMachine, title: "Todo task states (docs/design/plan-and-solve-design.md diagram 2, BLOCKED from docs/design/todo-list-design.md)" },
  plan_tool: { machine: planTaskMachine, title: "Plan Tool task status transitions (docs/design/plan-tool-design.md)" },
};

/** The machine that runs an agent of each kind: the kind's own name. */
export function machineOfKind(kind: string): string | undefined {
  return kind in KINDS ? kind : undefined;
}
