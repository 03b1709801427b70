import type { KindDefinition } from "../types.js";
import { planAndSolveMachine } from "./machine.js";
import { runPlanAndSolve } from "./run.js";

/** `plan_and_solve` (seeds 000 and 002): a todo list planned, worked and verified. */
export const planAndSolveKind: KindDefinition<"plan_and_solve"> = {
  kind: "plan_and_solve",
  machine: planAndSolveMachine,
  title: "Plan-and-Solve agent lifecycle (seed 000, diagram 1)",
  run: runPlanAndSolve,
};
