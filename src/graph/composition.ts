import type { AgentConfig, ResolvedTeam } from "../config/types.js";

/** Which agents an agent calls, with the role of each call, as the team file says. */
export function calls(agent: AgentConfig, team: ResolvedTeam): { callee: string; role: string }[] {
  const out: { callee: string; role: string }[] = [];
  switch (agent.kind) {
    case "plan_and_solve_flow":
      out.push({ callee: agent.planner, role: "plan" }, { callee: agent.executor, role: "each step" });
      if (agent.enable_replanner) out.push({ callee: agent.replanner, role: "replan" });
      break;
    case "plan_solver":
      out.push({ callee: agent.planner, role: "plan" }, { callee: agent.solver, role: `each task (≤${agent.concurrency} at once)` });
      if (agent.aggregator) out.push({ callee: agent.aggregator, role: "aggregate" });
      break;
    case "sop":
      out.push({ callee: agent.strategist, role: `drives ${agent.workflow}` });
      break;
    default:
      break;
  }
  for (const tool of agent.tools) if (team.agents[tool]) out.push({ callee: tool, role: "tool" });
  return out;
}

/**
 * Draw which agents an agent calls, transitively, as a Mermaid
 * `stateDiagram-v2` (one state per agent, labelled with its kind).
 */
export function compositionToMermaid(team: ResolvedTeam, root: string): string {
  const lines = ["stateDiagram-v2", `  %% composition of ${root} in ${team.name}`];
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    seen.add(name);
    const agent = team.agents[name];
    if (!agent) return;
    lines.push(`  state "${name} (${agent.kind})" as ${id(name)}`);
    for (const { callee, role } of calls(agent, team)) {
      lines.push(`  ${id(name)} --> ${id(callee)} : ${role}`);
      visit(callee);
    }
  };
  lines.push(`  [*] --> ${id(root)}`);
  visit(root);
  return `${lines.join("\n")}\n`;
}

function id(name: string): string {
  return name.replace(/[^A-Za-z0-9_]/g, "_");
}
