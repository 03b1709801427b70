import { lazyKind } from "../lazy-kind.js";

/** `sop` (docs/design/plan-tool-design.md): a plan from the team's workflow, driven by its strategist. */
export const sopKind = lazyKind("sop", "SOP plan driven by its strategist (docs/design/plan-tool-design.md)", async () => {
  const [{ sopMachine }, { runSop }] = await Promise.all([import("./machine.js"), import("./run.js")]);
  return { machine: sopMachine, run: runSop };
});
