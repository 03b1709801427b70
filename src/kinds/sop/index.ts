import type { KindDefinition } from "../types.js";
import { sopMachine } from "./machine.js";
import { runSop } from "./run.js";

/** `sop` (seed 003): a plan from the team's workflow, driven by its strategist. */
export const sopKind: KindDefinition<"sop"> = {
  kind: "sop",
  machine: sopMachine,
  title: "SOP plan driven by its strategist (seed 003)",
  run: runSop,
};
