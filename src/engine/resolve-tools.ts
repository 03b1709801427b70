import { PLAN_TOOL_NAMES, isBuiltinToolName } from "../config/builtin-names.js";
import type { AgentConfig, ResolvedTeam } from "../config/types.js";
import type { PlanTool } from "../plan/plan-tool.js";
import { builtinTool } from "../tools/builtin/index.js";
import { withDeclaredLimits } from "../tools/declared.js";
import { loadToolModule, moduleTool } from "../tools/module.js";
import type { McpServers } from "../tools/mcp/servers.js";
import type { Tool } from "../tools/types.js";
import { agentAsTool, type CallAgentFromTool } from "./agent-tool.js";

export interface ToolResolution {
  team: ResolvedTeam;
  agent: AgentConfig;
  /** The Plan Tool of the run's store. */
  planTool(): PlanTool;
  callAgent: CallAgentFromTool;
  /** Implementations the agent kind binds itself (todo tools); they win over others of the same name. */
  extra: Tool[];
  /** Per-run cache of tools built from the team file. */
  cache: Map<string, Tool>;
  /** Tools the application gave `runTeam` in code, by name (docs/code-tools.md). */
  provided: ReadonlyMap<string, Tool>;
  /** The run's MCP servers; those the allow-list names were started by `prepareTools`. */
  mcp: McpServers;
}

/**
 * The code of the tools an allow-list may name beyond the calculator and
 * terminate, imported the first time an agent lists one (once per process):
 * the Plan Tool's methods, `knowledge_lookup`, and `command`/`http` tools
 * (node:child_process, node:http, node:https and node:dns): ~20 ms of every
 * `exec` that used none of them (docs/performance.md).
 */
const code: {
  plan?: typeof import("../plan/tools.js");
  knowledge?: typeof import("../tools/builtin/knowledge-lookup.js");
  declared?: typeof import("../tools/from-config.js");
} = {};

const isPlanToolName = (name: string) => (PLAN_TOOL_NAMES as readonly string[]).includes(name);

async function loadToolCode(team: ResolvedTeam, agent: AgentConfig): Promise<void> {
  for (const name of agent.tools) {
    const declared = team.tools[name];
    // What a name stands for when neither an agent nor a tool given in code takes it first; loading more than is used is harmless.
    const builtin = declared?.type === "builtin" ? declared.builtin : declared ? undefined : name;
    if (declared?.type === "command" || declared?.type === "http") code.declared ??= await import("../tools/from-config.js");
    else if (builtin !== undefined && isPlanToolName(builtin)) code.plan ??= await import("../plan/tools.js");
    else if (builtin === "knowledge_lookup") code.knowledge ??= await import("../tools/builtin/knowledge-lookup.js");
  }
}

/** A module `loadToolCode` imported; an internal error if it did not. */
function loaded<K extends keyof typeof code>(key: K): NonNullable<(typeof code)[K]> {
  const module = code[key];
  if (!module) throw new Error(`internal error: the code of the ${key} tools was not loaded before use`);
  return module as NonNullable<(typeof code)[K]>;
}

/**
 * Load what an agent's tools need before they can be offered: the code of the
 * tool kinds it lists (above), the module of each `module:` tool it lists
 * (imported once per process, built into the run's cache), and the MCP
 * servers it names (started once per run). Rejects
 * with one line when a module or a server fails, or when two entries of the
 * allow-list offer a tool of the same name (which one the model meant could
 * not be told).
 */
export async function prepareTools(team: ResolvedTeam, agent: AgentConfig, cache: Map<string, Tool>, mcp: McpServers, signal: AbortSignal): Promise<void> {
  await loadToolCode(team, agent);
  for (const name of agent.tools) {
    const declared = team.tools[name];
    if (declared?.type !== "module" || cache.has(`tool:${name}`)) continue;
    cache.set(`tool:${name}`, moduleTool(declared, await loadToolModule(declared.module)));
  }
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
 * to every tool its server offers), a tool given in code, another agent,
 * a Plan Tool method, or a built-in. Names that resolve to nothing here
 * (a todo tool listed for a kind that has no todo list) are left out, so a
 * call to them is refused back to the model like any tool outside the list.
 */
export function resolveTools(r: ToolResolution): Tool[] {
  const extra = new Map(r.extra.map((t) => [t.name, t]));
  const tools: Tool[] = [];
  let planTools: Map<string, Tool> | undefined;
  /** A built-in's implementation by its built-in name; the plan tools are made once per call. */
  const builtin = (name: string): Tool | undefined => {
    if (isPlanToolName(name)) {
      planTools ??= new Map(loaded("plan").createPlanTools(r.planTool()).map((t) => [t.name, t]));
      return planTools.get(name);
    }
    if (name === "knowledge_lookup") return loaded("knowledge").knowledgeLookupTool(r.team.knowledge);
    return builtinTool(name);
  };
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
    if (declared?.type === "builtin") {
      // An alias of a built-in (`plan_status: {builtin: get_plan_status}`): its implementation, the declared name and limits.
      const implementation = builtin(declared.builtin);
      if (implementation) tools.push(withDeclaredLimits(implementation, declared));
      continue;
    }
    if (declared) {
      tools.push(cached(r.cache, `tool:${name}`, () => loaded("declared").toolFromConfig(declared)));
      continue;
    }
    const provided = r.provided.get(name);
    if (provided) {
      tools.push(provided);
      continue;
    }
    const agent = r.team.agents[name];
    if (agent) {
      const tool = agentAsTool(agent, r.callAgent);
      tools.push(isAssignee(r.team, name) ? guardedByPlan(tool, r.planTool) : tool);
      continue;
    }
    const implementation = builtin(name);
    if (implementation) tools.push(implementation);
  }
  return tools;
}

/** True when some workflow of the team assigns a task to `agent`. */
function isAssignee(team: ResolvedTeam, agent: string): boolean {
  return Object.values(team.workflows).some((w) => w.steps.some((s) => s.tasks.some((t) => t.assignee === agent)));
}

/**
 * An assignee agent as a tool, whose calls pass through the rules of the plan
 * bound to the caller's step (a sop strategist's: src/kinds/sop/rules.ts);
 * a caller with no bound plan calls it as it is.
 */
function guardedByPlan(tool: Tool, planTool: () => PlanTool): Tool {
  return {
    ...tool,
    execute: (args, ctx) => {
      const rules = planTool().rulesFor(ctx.scope);
      return rules ? rules.guardAgentCall(tool.name, ctx.scope.agent_id, () => tool.execute(args, ctx)) : tool.execute(args, ctx);
    },
  };
}

function cached(cache: Map<string, Tool>, key: string, build: () => Tool): Tool {
  let tool = cache.get(key);
  if (!tool) {
    tool = build();
    cache.set(key, tool);
  }
  return tool;
}

/**
 * The tools given to `runTeam` in code, by name; or why they cannot be used:
 * one that is not a tool, a name given twice or already taken by the team
 * (a tool, an agent, a built-in), or a name an agent lists that neither the
 * team file nor these tools provide.
 */
export function providedTools(team: ResolvedTeam, tools: readonly Tool[]): Map<string, Tool> | string {
  const byName = new Map<string, Tool>();
  for (const [index, tool] of tools.entries()) {
    if (!isTool(tool)) return `runTeam: tools[${index}] is not a tool (make it with defineTool())`;
    const taken = byName.has(tool.name)
      ? "another tool given to runTeam"
      : team.tools[tool.name]
        ? "a tool of the team file"
        : team.agents[tool.name]
          ? "an agent of the team"
          : isBuiltinToolName(tool.name)
            ? "a built-in tool"
            : undefined;
    if (taken !== undefined) return `runTeam: tool "${tool.name}" has the name of ${taken}: rename it`;
    byName.set(tool.name, tool);
  }
  for (const agent of Object.values(team.agents)) {
    for (const name of agent.tools) {
      if (team.tools[name] || team.agents[name] || isBuiltinToolName(name) || byName.has(name)) continue;
      return `agent ${agent.name} lists tool "${name}", which neither the team file nor runTeam's tools provide`;
    }
  }
  return byName;
}

function isTool(value: unknown): value is Tool {
  const t = value as Partial<Tool> | null;
  return (
    typeof t === "object" && t !== null && typeof t.name === "string" && typeof t.execute === "function" &&
    typeof t.parameters === "object" && typeof t.timeout_ms === "number" && typeof t.max_output_bytes === "number"
  );
}
