import type { AnyStateMachine } from "xstate";
import { reactMachine } from "../agents/react/machine.js";

/** Every machine `runtime graph --machine NAME` can draw, by name. */
export const MACHINES: Record<string, { machine: AnyStateMachine; title: string }> = {
  react: { machine: reactMachine, title: "Recursive ReAct agent (seed 004)" },
};

/** The machine that runs an agent of each kind. */
export const MACHINE_OF_KIND: Record<string, string> = {
  react: "react",
};
