import { lazyKind } from "../lazy-kind.js";

/** `plan_solver` (seed 000 §8–9): planner, solvers in parallel, aggregator. */
export const planSolverKind = lazyKind("plan_solver", "Plan → solvers → aggregator (seed 000 §8–9)", async () => {
  const [{ planSolverMachine }, { runPlanSolver }] = await Promise.all([import("./machine.js"), import("./run.js")]);
  return { machine: planSolverMachine, run: runPlanSolver };
});
