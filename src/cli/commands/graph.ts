import type { Command } from "commander";
import { loadTeamOrReport } from "../load-team.js";
import { EXIT, type SetExit } from "../exit.js";

const MACHINE_NAMES = "react | plan_and_solve | plan_and_solve_flow | plan_solver | sop | task | plan_tool";

/** `runtime graph --machine NAME` or `runtime graph FILE [--agent NAME]`: Mermaid from the definitions. */
export function registerGraph(program: Command, setExit: SetExit): void {
  program
    .command("graph")
    .description("print machines as Mermaid stateDiagram-v2, generated from their definitions")
    .argument("[file]", "team file: draw its agents' machines and compositions")
    .option("-a, --agent <name>", "only this agent")
    .option("-m, --machine <name>", `a built-in machine: ${MACHINE_NAMES}`)
    .action(async (file: string | undefined, opts: { agent?: string; machine?: string }) => {
      setExit(await graph(file, opts));
    });
}

async function graph(file: string | undefined, opts: { agent?: string; machine?: string }): Promise<number> {
  const [{ compositionToMermaid }, { MACHINES, machineOfKind }, { machineToMermaid }] = await Promise.all([
    import("../../graph/composition.js"),
    import("../../graph/machines.js"),
    import("../../graph/mermaid.js"),
  ]);
  const err = (message: string) => {
    process.stderr.write(`runtime graph: ${message}\n`);
    return EXIT.USAGE;
  };
  if (opts.machine !== undefined) {
    const entry = MACHINES[opts.machine];
    if (!entry) return err(`unknown machine '${opts.machine}' (machines: ${Object.keys(MACHINES).join(", ")})`);
    process.stdout.write(machineToMermaid(entry.machine, entry.title));
    return EXIT.OK;
  }
  if (file === undefined) return err("give a team file or --machine NAME");
  const team = await loadTeamOrReport(file, "graph");
  if (!team) return EXIT.USAGE;
  const names = opts.agent !== undefined ? [opts.agent] : Object.keys(team.agents);
  const out: string[] = [];
  for (const name of names) {
    const agent = team.agents[name];
    if (!agent) return err(`unknown agent '${name}' (agents: ${Object.keys(team.agents).join(", ")})`);
    out.push(`%% agent ${name} (${agent.kind})`);
    out.push(compositionToMermaid(team, name));
    const machine = MACHINES[machineOfKind(agent.kind) ?? ""];
    if (machine) out.push(machineToMermaid(machine.machine, `${name}: ${machine.title}`));
  }
  process.stdout.write(out.join("\n"));
  return EXIT.OK;
}
