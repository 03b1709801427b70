import { lazyKind } from "../lazy-kind.js";

/** `plan_solver` (docs/design/plan-solver-design.md): planner, solvers in parallel, aggregator. */
export const planSolverKind = lazyKind("plan_solver", "Plan → solvers → aggregator (docs/design/plan-solver-design.md)", async () => {
  const [{ planSolverMachine }, { runPlanSolver }] = await Promise.all([import("./machine.js"), import("./run.js")]);
  return { machine: planSolverMachine, run: runPlanSolver };
});
