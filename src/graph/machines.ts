import type { AnyStateMachine } from "xstate";
import { planAndSolveMachine } from "../agents/plan-and-solve/machine.js";
import { taskMachine } from "../agents/plan-and-solve/task-machine.js";
import { reactMachine } from "../agents/react/machine.js";
import { planAndSolveFlowMachine } from "../flows/plan-and-solve-flow-machine.js";
import { planTaskMachine } from "./plan-task-machine.js";

/** Every machine `runtime graph --machine NAME` can draw, by name. */
export const MACHINES: Record<string, { machine: AnyStateMachine; title: string }> = {
  react: { machine: reactMachine, title: "Recursive ReAct agent (seed 004)" },
  plan_and_solve: { machine: planAndSolveMachine, title: "Plan-and-Solve agent lifecycle (seed 000, diagram 1)" },
  task: { machine: taskMachine, title: "Todo task states (seed 000 diagram 2, BLOCKED from seed 002)" },
  plan_tool: { machine: planTaskMachine, title: "Plan Tool task status transitions (seed 003)" },
  plan_and_solve_flow: { machine: planAndSolveFlowMachine, title: "PlanAndSolve flow (seed 001)" },
};

/** The machine that runs an agent of each kind. */
export const MACHINE_OF_KIND: Record<string, string> = {
  react: "react",
  plan_and_solve: "plan_and_solve",
  plan_and_solve_flow: "plan_and_solve_flow",
};
