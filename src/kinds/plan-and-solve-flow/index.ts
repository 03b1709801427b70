import { lazyKind } from "../lazy-kind.js";

/** `plan_and_solve_flow` (seed 001): planner, executor per step, replanner. */
export const planAndSolveFlowKind = lazyKind("plan_and_solve_flow", "PlanAndSolve flow (seed 001)", async () => {
  const [{ planAndSolveFlowMachine }, { runPlanAndSolveFlow }] = await Promise.all([import("./machine.js"), import("./run.js")]);
  return { machine: planAndSolveFlowMachine, run: runPlanAndSolveFlow };
});
