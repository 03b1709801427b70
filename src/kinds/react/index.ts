import { lazyKind } from "../lazy-kind.js";

/** `react` (seed 004): the recursive ReAct agent. */
export const reactKind = lazyKind("react", "Recursive ReAct agent (seed 004)", async () => {
  const [{ reactMachine }, { runReact }] = await Promise.all([import("./machine.js"), import("./run.js")]);
  return { machine: reactMachine, run: runReact };
});
