/**
 * What `runtime tools` shows: per agent, the tools its model would be
 * offered, prepared and built by the tool registry as a run does
 * (src/engine/tool-registry.ts), with the team's MCP servers started for the
 * listing and stopped after it.
 */
import type { ResolvedTeam } from "../config/types.js";
import type { RunStores } from "../store/store.js";
import { McpServers } from "../tools/mcp/servers.js";
import type { Tool } from "../tools/types.js";
import { argsValidator } from "../tools/validate-args.js";
import { prepareTools } from "./resolve-tools.js";
import { entryOf, rowOf, type BuildEnv } from "./tool-registry.js";
import { unreachable } from "../errors.js";

/** One tool an agent's model would see. */
export interface ListedTool {
  name: string;
  description: string;
  /** Where it comes from: `mcp fs`, `command`, `http`, `module`, `builtin`, `agent`, `plan tool`, `kind` (bound by the agent's kind at run time). */
  source: string;
  /** Why the ToolBox could not check arguments against the tool's schema (an MCP server's schema it cannot compile). */
  schema_problem?: string;
}

export interface AgentTools {
  agent: string;
  kind: string;
  tools: ListedTool[];
  /** Set when the agent's MCP servers could not be started (one line). */
  error?: string;
}

/**
 * The tools of `agents` (every agent of the team by default). Never throws
 * for a server that does not start: that agent's `error` says why.
 */
export async function listAgentTools(team: ResolvedTeam, options: { agents?: string[]; stores: RunStores; signal?: AbortSignal }): Promise<AgentTools[]> {
  const env: BuildEnv = {
    team,
    cache: new Map<string, Tool>(),
    mcp: new McpServers(),
    signal: options.signal ?? new AbortController().signal,
    planTool: () => options.stores.planTool(),
    callAgent: async () => unreachable("a tool built only to be listed was called"),
  };
  const out: AgentTools[] = [];
  try {
    for (const name of options.agents ?? Object.keys(team.agents)) {
      const agent = team.agents[name];
      if (!agent) continue;
      try {
        await prepareTools(team, agent, env.cache, env.mcp, env.signal);
      } catch (err) {
        out.push({ agent: name, kind: agent.kind, tools: [], error: err instanceof Error ? err.message : String(err) });
        continue;
      }
      const tools: ListedTool[] = [];
      const seen = new Set<string>();
      for (const entryName of agent.tools) {
        const entry = entryOf(entryName, team, new Map());
        if (!entry) continue;
        const row = rowOf(entry);
        const source = row.source(entry);
        const built = row.build(entry, env);
        // A kind's tool is known by name only: its kind binds it when the agent runs.
        const shown = built.length > 0 ? built : [{ name: entry.name, description: "", parameters: undefined }];
        for (const tool of shown) {
          if (seen.has(tool.name)) continue;
          seen.add(tool.name);
          const problem = tool.parameters === undefined ? undefined : argsValidator.schemaProblem(tool.parameters);
          tools.push({ name: tool.name, description: tool.description, source, ...(problem !== undefined ? { schema_problem: problem } : {}) });
        }
      }
      out.push({ agent: name, kind: agent.kind, tools });
    }
  } finally {
    await env.mcp.close();
  }
  return out;
}
