import type { AgentKind } from "../config/types.js";
import { runPlanAndSolve } from "../agents/plan-and-solve/run.js";
import { runReact } from "../agents/react/run.js";
import { runPlanAndSolveFlow } from "../flows/plan-and-solve-flow.js";
import { runPlanSolver } from "../flows/plan-solver.js";
import { runSop } from "../flows/sop.js";
import type { AgentRunner } from "./types.js";

/** The runner of each agent kind. */
export const AGENT_RUNNERS: Partial<Record<AgentKind, AgentRunner>> = {
  react: runReact,
  plan_and_solve: runPlanAndSolve,
  plan_and_solve_flow: runPlanAndSolveFlow,
  plan_solver: runPlanSolver,
  sop: runSop,
};
