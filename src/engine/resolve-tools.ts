/**
 * An agent's allow-list turned into tools through the tool registry
 * (tool-registry.ts): prepared before its step starts, resolved each time
 * its kind asks for its toolbox; and the check of the tools an application
 * gives `runTeam` in code (docs/code-tools.md).
 */
import { HOLDER_NAMES, holderOf, isKindToolName, type TeamNames } from "../config/tool-names.js";
import type { AgentConfig, ResolvedTeam } from "../config/types.js";
import type { McpServers } from "../tools/mcp/servers.js";
import type { Tool } from "../tools/types.js";
import { entryOf, offeredNames, rowOf, type BuildEnv, type PrepareEnv, type ToolEntry } from "./tool-registry.js";
import { RuntimeError, unreachable } from "../errors.js";

export interface ToolResolution extends BuildEnv {
  agent: AgentConfig;
  /** The tools the agent's kind binds (todo tools): only names the registry lists as a kind's. */
  bound: readonly Tool[];
  /** Tools the application gave `runTeam` in code, by name (docs/code-tools.md). */
  given: ReadonlyMap<string, Tool>;
}

/** An agent's tools, and the names of those whose calls wait for a person (docs/durable-runs.md#approvals). */
export interface ResolvedTools {
  tools: Tool[];
  /** The agent's `approval` list as resolved: an MCP entry stands for the tools of its server. */
  approval: ReadonlySet<string>;
}

/**
 * Make ready what an agent's tools need before they can be offered (each
 * row's `prepare`: code imported, `module:` tools loaded, MCP servers
 * started). Rejects with one line when a module or a server fails, or when
 * two entries of the allow-list offer a tool of the same name (which one the
 * model meant could not be told). Tools given in code are not seen here: a
 * name the team does not hold offers its own name.
 */
export async function prepareTools(team: ResolvedTeam, agent: AgentConfig, cache: Map<string, Tool>, mcp: McpServers, signal: AbortSignal): Promise<void> {
  const env: PrepareEnv = { cache, mcp, signal, team };
  const entries = new Map<string, ToolEntry | undefined>([...new Set(agent.tools)].map((name) => [name, entryOf(name, team, new Map())]));
  // All at once (servers start in parallel); the first failure in allow-list order is the one reported.
  const prepared = await Promise.allSettled([...entries.values()].map((entry) => (entry ? rowOf(entry).prepare?.(entry, env) : undefined)));
  for (const outcome of prepared) if (outcome.status === "rejected") throw outcome.reason;
  const offeredBy = new Map<string, ToolEntry | string>();
  for (const [name, entry] of entries) {
    for (const tool of entry ? offeredNames(entry, env) : [name]) {
      const other = offeredBy.get(tool);
      if (other !== undefined) {
        const what = (e: ToolEntry | string) => (typeof e === "string" ? `"${e}"` : e.row === "mcp" ? `MCP server "${e.name}"` : `"${e.name}"`);
        throw new RuntimeError(
          "CONFIG_INVALID",
          `agent ${agent.name} lists two tools named "${tool}": ${what(other)} and ${what(entry ?? name)}; keep one, or narrow an MCP server with mcp.tools`,
        );
      }
      offeredBy.set(tool, entry ?? name);
    }
  }
}

/**
 * Turn an agent's allow-list, prepared by `prepareTools`, into tools, each
 * name as the registry resolves it. Names that resolve to no tool (a todo
 * tool listed for a kind that has no todo list) are left out, so a call to
 * them is refused back to the model like any tool outside the list.
 */
export function resolveTools(r: ToolResolution): ResolvedTools {
  for (const tool of r.bound) {
    if (!isKindToolName(tool.name)) unreachable(`an agent kind bound "${tool.name}", which the tool registry does not list as a kind's tool`);
  }
  const bound = new Map(r.bound.map((t) => [t.name, t]));
  const entry = (name: string) => entryOf(name, r.team, r.given, bound);
  const tools = r.agent.tools.flatMap((name) => {
    const e = entry(name);
    return e ? rowOf(e).build(e, r) : [];
  });
  const approval = new Set(
    r.agent.approval.flatMap((name) => {
      const e = entry(name);
      return e ? offeredNames(e, r) : [name];
    }),
  );
  return { tools, approval };
}

/**
 * The tools given to `runTeam` in code, by name; or why they cannot be used:
 * one that is not a tool, a name that something else already holds (a tool
 * of the team file, another given tool, an agent, a built-in), or a name an
 * agent lists that neither the team file nor these tools provide.
 */
export function providedTools(team: ResolvedTeam, tools: readonly Tool[]): Map<string, Tool> | string {
  const byName = new Map<string, Tool>();
  const names: TeamNames = { tool: (n) => Object.hasOwn(team.tools, n), code: (n) => byName.has(n), agent: (n) => Object.hasOwn(team.agents, n) };
  for (const [index, tool] of tools.entries()) {
    if (!isTool(tool)) return `runTeam: tools[${index}] is not a tool (make it with defineTool())`;
    const holder = holderOf(tool.name, names);
    if (holder !== undefined) return `runTeam: tool "${tool.name}" has the name of ${HOLDER_NAMES[holder]}: rename it`;
    byName.set(tool.name, tool);
  }
  for (const agent of Object.values(team.agents)) {
    for (const name of agent.tools) {
      if (holderOf(name, names) === undefined) return `agent ${agent.name} lists tool "${name}", which neither the team file nor runTeam's tools provide`;
    }
  }
  return byName;
}

function isTool(value: unknown): value is Tool {
  const t = value as Partial<Tool> | null;
  return (
    typeof t === "object" &&
    t !== null &&
    typeof t.name === "string" &&
    typeof t.execute === "function" &&
    typeof t.parameters === "object" &&
    typeof t.timeout_ms === "number" &&
    typeof t.max_output_bytes === "number"
  );
}
