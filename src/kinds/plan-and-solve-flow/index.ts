import { lazyKind } from "../lazy-kind.js";

/** `plan_and_solve_flow` (docs/design/plan-and-solve-flow-design.md): planner, executor per step, replanner. */
export const planAndSolveFlowKind = lazyKind("plan_and_solve_flow", "PlanAndSolve flow (docs/design/plan-and-solve-flow-design.md)", async () => {
  const [{ planAndSolveFlowMachine }, { runPlanAndSolveFlow }] = await Promise.all([import("./machine.js"), import("./run.js")]);
  return { machine: planAndSolveFlowMachine, run: runPlanAndSolveFlow };
});
