import type { KindDefinition } from "../types.js";
import { reactMachine } from "./machine.js";
import { runReact } from "./run.js";

/** `react` (seed 004): the recursive ReAct agent. */
export const reactKind: KindDefinition<"react"> = {
  kind: "react",
  machine: reactMachine,
  title: "Recursive ReAct agent (seed 004)",
  run: runReact,
};
