import { lazyKind } from "../lazy-kind.js";

/** `plan_and_solve` (seeds 000 and 002): a todo list planned, worked and verified. */
export const planAndSolveKind = lazyKind("plan_and_solve", "Plan-and-Solve agent lifecycle (seed 000, diagram 1)", async () => {
  const [{ planAndSolveMachine }, { runPlanAndSolve }] = await Promise.all([import("./machine.js"), import("./run.js")]);
  return { machine: planAndSolveMachine, run: runPlanAndSolve };
});
