import type { KindDefinition } from "../types.js";
import { planSolverMachine } from "./machine.js";
import { runPlanSolver } from "./run.js";

/** `plan_solver` (seed 000 §8–9): planner, solvers in parallel, aggregator. */
export const planSolverKind: KindDefinition<"plan_solver"> = {
  kind: "plan_solver",
  machine: planSolverMachine,
  title: "Plan → solvers → aggregator (seed 000 §8–9)",
  run: runPlanSolver,
};
