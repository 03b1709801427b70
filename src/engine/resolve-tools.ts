import type { AgentConfig, ResolvedTeam } from "../config/types.js";
import { PLAN_TOOL_NAMES, createPlanTools, openPlanTool } from "../plan/tools.js";
import { builtinTool } from "../tools/builtin/index.js";
import { knowledgeLookupTool } from "../tools/builtin/knowledge-lookup.js";
import { toolFromConfig, withDeclaredLimits } from "../tools/from-config.js";
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
}

/**
 * Turn an agent's allow-list into tools. A name resolves, in order, to an
 * extra tool of the agent kind, a tool declared under `tools:`, another agent,
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
    if ((PLAN_TOOL_NAMES as readonly string[]).includes(name)) {
      planTools ??= new Map(createPlanTools(openPlanTool(r.trace_dir)).map((t) => [t.name, t]));
      return planTools.get(name);
    }
    if (name === "knowledge_lookup") return knowledgeLookupTool(r.team.knowledge);
    return builtinTool(name);
  };
  for (const name of r.agent.tools) {
    const fromExtra = extra.get(name);
    if (fromExtra) {
      tools.push(fromExtra);
      continue;
    }
    const declared = r.team.tools[name];
    if (declared?.type === "builtin") {
      // An alias of a built-in (`plan_status: {builtin: get_plan_status}`): its implementation, the declared name and limits.
      const implementation = builtin(declared.builtin);
      if (implementation) tools.push(withDeclaredLimits(implementation, declared));
      continue;
    }
    if (declared) {
      tools.push(cached(r.cache, `tool:${name}`, () => toolFromConfig(declared)));
      continue;
    }
    const agent = r.team.agents[name];
    if (agent) {
      const tool = agentAsTool(agent, r.callAgent);
      tools.push(isAssignee(r.team, name) ? guardedByPlan(tool, r.trace_dir) : tool);
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
function guardedByPlan(tool: Tool, traceDir: string): Tool {
  return {
    ...tool,
    execute: (args, ctx) => {
      const rules = openPlanTool(traceDir).rulesFor(ctx.scope);
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
