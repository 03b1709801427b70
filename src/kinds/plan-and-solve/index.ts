import { lazyKind } from "../lazy-kind.js";

/** `plan_and_solve` (docs/design/plan-and-solve-design.md, docs/design/todo-list-design.md): a todo list planned, worked and verified. */
export const planAndSolveKind = lazyKind(
  "plan_and_solve",
  "Plan-and-Solve agent lifecycle (docs/design/plan-and-solve-design.md diagram 1)",
  async () => {
    const [{ planAndSolveMachine }, { runPlanAndSolve }] = await Promise.all([import("./machine.js"), import("./run.js")]);
    return { machine: planAndSolveMachine, run: runPlanAndSolve };
  },
  { attachments: true },
);
