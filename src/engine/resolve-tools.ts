import type { AgentConfig, ResolvedTeam } from "../config/types.js";
import { PLAN_TOOL_NAMES, createPlanTools, openPlanTool } from "../plan/tools.js";
import { builtinTool } from "../tools/builtin/index.js";
import { toolFromConfig } from "../tools/from-config.js";
import type { McpServers } from "../tools/mcp/servers.js";
import type { Tool } from "../tools/types.js";
import { agentAsTool, type CallAgentFromTool } from "./agent-tool.js";

export interface ToolResolution {
  team: ResolvedTeam;
  agent: AgentConfig;
  trace_dir: string;
  callAgent: CallAgentFromTool;
  /** Implementations the agent kind binds itself (todo tools); they win over others of the same name. */
  extra: Tool[];
  /** Per-run cache of tools built from the team file. */
  cache: Map<string, Tool>;
  /** The run's MCP servers; those the allow-list names were started by `prepareTools`. */
  mcp: McpServers;
}

/**
 * Start (once per run) the MCP servers the agent's allow-list names, so
 * that `resolveTools` finds their tools. Rejects with one line when a server
 * does not start, or when two entries of the allow-list offer a tool of the
 * same name (which one the model meant could not be told).
 */
export async function prepareTools(team: ResolvedTeam, agent: AgentConfig, mcp: McpServers, signal: AbortSignal): Promise<void> {
  const names = [...new Set(agent.tools)];
  const servers = names.flatMap((name) => {
    const config = team.tools[name];
    return config?.type === "mcp" ? [config] : [];
  });
  if (servers.length === 0) return;
  const listed = new Map<string, Tool[]>();
  await Promise.all(servers.map(async (config) => listed.set(config.name, await mcp.tools(config, signal))));
  const offeredBy = new Map<string, string>();
  for (const name of names) {
    for (const tool of listed.get(name)?.map((t) => t.name) ?? [name]) {
      const other = offeredBy.get(tool);
      if (other !== undefined) {
        const what = (n: string) => (listed.has(n) ? `MCP server "${n}"` : `"${n}"`);
        throw new Error(`agent ${agent.name} lists two tools named "${tool}": ${what(other)} and ${what(name)}; keep one, or narrow an MCP server with mcp.tools`);
      }
      offeredBy.set(tool, name);
    }
  }
}

/**
 * Turn an agent's allow-list into tools. A name resolves, in order, to an
 * extra tool of the agent kind, a tool declared under `tools:` (an MCP entry
 * to every tool its server offers), another agent,
 * a Plan Tool method, or a built-in. Names that resolve to nothing here
 * (a todo tool listed for a kind that has no todo list) are left out, so a
 * call to them is refused back to the model like any tool outside the list.
 */
export function resolveTools(r: ToolResolution): Tool[] {
  const extra = new Map(r.extra.map((t) => [t.name, t]));
  const tools: Tool[] = [];
  let planTools: Map<string, Tool> | undefined;
  for (const name of r.agent.tools) {
    const fromExtra = extra.get(name);
    if (fromExtra) {
      tools.push(fromExtra);
      continue;
    }
    const declared = r.team.tools[name];
    if (declared?.type === "mcp") {
      const listed = r.mcp.listed(name);
      if (!listed) throw new Error(`internal error: the MCP server "${name}" was not started before its tools were asked for`);
      tools.push(...listed);
      continue;
    }
    if (declared) {
      tools.push(cached(r.cache, `tool:${name}`, () => toolFromConfig(declared)));
      continue;
    }
    const agent = r.team.agents[name];
    if (agent) {
      tools.push(agentAsTool(agent, r.callAgent));
      continue;
    }
    if ((PLAN_TOOL_NAMES as readonly string[]).includes(name)) {
      planTools ??= new Map(createPlanTools(openPlanTool(r.trace_dir)).map((t) => [t.name, t]));
      const tool = planTools.get(name);
      if (tool) tools.push(tool);
      continue;
    }
    const builtin = builtinTool(name);
    if (builtin) tools.push(builtin);
  }
  return tools;
}

function cached(cache: Map<string, Tool>, key: string, build: () => Tool): Tool {
  let tool = cache.get(key);
  if (!tool) {
    tool = build();
    cache.set(key, tool);
  }
  return tool;
}
