/**
 * What `runtime tools` shows: per agent, the tools its model would be
 * offered, resolved the way a run resolves them (src/engine/resolve-tools.ts),
 * with the team's MCP servers started for the listing and stopped after it.
 */
import type { Tool } from "../tools/types.js";
import { PLAN_TOOL_NAMES } from "../config/builtin-names.js";
import type { ResolvedTeam } from "../config/types.js";
import { argsValidator } from "../tools/validate-args.js";
import { McpServers } from "../tools/mcp/servers.js";
import { prepareTools, resolveTools } from "./resolve-tools.js";
import { openPlanTool } from "../store/sqlite/store.js";

/** One tool an agent's model would see. */
export interface ListedTool {
  name: string;
  description: string;
  /** Where it comes from: `mcp fs`, `command`, `http`, `builtin`, `agent`, `plan tool`, `kind` (bound by the agent's kind at run time). */
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
export async function listAgentTools(
  team: ResolvedTeam,
  options: { agents?: string[]; trace_dir: string; signal?: AbortSignal },
): Promise<AgentTools[]> {
  const servers = new McpServers();
  const cache = new Map<string, Tool>();
  const signal = options.signal ?? new AbortController().signal;
  const out: AgentTools[] = [];
  try {
    for (const name of options.agents ?? Object.keys(team.agents)) {
      const agent = team.agents[name];
      if (!agent) continue;
      try {
        await prepareTools(team, agent, cache, servers, signal);
      } catch (err) {
        out.push({ agent: name, kind: agent.kind, tools: [], error: err instanceof Error ? err.message : String(err) });
        continue;
      }
      const resolved = resolveTools({
        team,
        agent,
        planTool: () => openPlanTool(options.trace_dir),
        callAgent: () => Promise.reject(new Error("only listed")),
        extra: [],
        cache,
        provided: new Map(),
        mcp: servers,
      });
      const tools: ListedTool[] = [];
      const seen = new Set<string>();
      for (const entry of agent.tools) {
        const declared = team.tools[entry];
        const matching = declared?.type === "mcp" ? (servers.listed(entry) ?? []) : resolved.filter((t) => t.name === entry);
        if (matching.length === 0 && !seen.has(entry)) {
          seen.add(entry);
          tools.push({ name: entry, description: "", source: "kind" });
        }
        for (const tool of matching) {
          if (seen.has(tool.name)) continue;
          seen.add(tool.name);
          const source = declared
            ? declared.type === "mcp"
              ? `mcp ${entry}`
              : declared.type
            : team.agents[entry]
              ? "agent"
              : (PLAN_TOOL_NAMES as readonly string[]).includes(entry)
                ? "plan tool"
                : "builtin";
          const problem = argsValidator.schemaProblem(tool.parameters);
          tools.push({ name: tool.name, description: tool.description, source, ...(problem !== undefined ? { schema_problem: problem } : {}) });
        }
      }
      out.push({ agent: name, kind: agent.kind, tools });
    }
  } finally {
    await servers.close();
  }
  return out;
}
