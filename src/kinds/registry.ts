/**
 * Every agent kind, by name: the one registry that the engine's dispatcher,
 * `runtime graph` and the docs read (docs/design/kinds.md). Adding a kind is a
 * folder under src/kinds/ exporting its KindDefinition, and one line here
 * (and its `kind` value in schemas/team.schema.json).
 */
import type { AgentKind } from "../config/types.js";
import { planAndSolveKind } from "./plan-and-solve/index.js";
import { planAndSolveFlowKind } from "./plan-and-solve-flow/index.js";
import { planSolverKind } from "./plan-solver/index.js";
import { reactKind } from "./react/index.js";
import { sopKind } from "./sop/index.js";
import type { KindDefinition } from "./types.js";

export const KINDS: { [K in AgentKind]: KindDefinition<K> } = {
  react: reactKind,
  plan_and_solve: planAndSolveKind,
  plan_and_solve_flow: planAndSolveFlowKind,
  plan_solver: planSolverKind,
  sop: sopKind,
};
