import { lazyKind } from "../lazy-kind.js";

/** `react` (docs/design/react-design.md): the recursive ReAct agent. */
export const reactKind = lazyKind(
  "react",
  "Recursive ReAct agent (docs/design/react-design.md)",
  async () => {
    const [{ reactMachine }, { runReact }, { partialAnswer }] = await Promise.all([import("./machine.js"), import("./run.js"), import("./protocol.js")]);
    return { machine: reactMachine, run: runReact, partialAnswer };
  },
  { attachments: true },
);
