import type { KindDefinition } from "../types.js";
import { planAndSolveFlowMachine } from "./machine.js";
import { runPlanAndSolveFlow } from "./run.js";

/** `plan_and_solve_flow` (seed 001): planner, executor per step, replanner. */
export const planAndSolveFlowKind: KindDefinition<"plan_and_solve_flow"> = {
  kind: "plan_and_solve_flow",
  machine: planAndSolveFlowMachine,
  title: "PlanAndSolve flow (seed 001)",
  run: runPlanAndSolveFlow,
};
