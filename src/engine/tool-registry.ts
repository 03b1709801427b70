/**
 * The tool registry (docs/design/engine.md#tool-calls). What a name of an
 * agent's allow-list stands for is found in one order (`entryOf`), and one
 * table (`ROWS`) says, for each thing a name can stand for -- a tool the
 * agent's kind binds, a built-in, a tool declared under `tools:` of each
 * type, a tool given in code, another agent -- how it is prepared before the
 * step (code imported, a module loaded, a server started), built into
 * runnable tools, and shown by `runtime tools`. Preparation and resolution
 * (resolve-tools.ts) and the listing (list-tools.ts) read nothing else.
 */
import {
  BUILTIN_TOOLS,
  BUILTIN_TOOL_NAMES,
  holderOf,
  isBuiltinToolName,
  isKindToolName,
  PLAN_TOOL_NAMES,
  type BuiltinToolName,
  type KindToolName,
  type TeamNames,
} from "../config/tool-names.js";
import type {
  A2AToolConfig,
  AgentConfig,
  BuiltinToolConfig,
  CommandToolConfig,
  HttpToolConfig,
  McpToolConfig,
  ModuleToolConfig,
  ResolvedTeam,
  ToolConfig,
} from "../config/types.js";
import { RuntimeError, unreachable } from "../errors.js";
import type { PlanTool } from "../plan/plan-tool.js";
import { withDeclaredLimits } from "../tools/declared.js";
import type { McpServers } from "../tools/mcp/servers.js";
import { loadToolModule, moduleTool } from "../tools/module.js";
import type { Tool } from "../tools/types.js";
import { agentAsTool, type CallAgentFromTool } from "./agent-tool.js";

/** What one name of an allow-list stands for: the registry's row and what the row needs. */
export type ToolEntry =
  | { row: "kind"; name: string; tool: Tool | undefined }
  | { row: "builtin"; name: string; builtin: RuntimeBuiltin; declared?: BuiltinToolConfig }
  | { row: "command"; name: string; config: CommandToolConfig }
  | { row: "http"; name: string; config: HttpToolConfig }
  | { row: "module"; name: string; config: ModuleToolConfig }
  | { row: "mcp"; name: string; config: McpToolConfig }
  | { row: "a2a"; name: string; config: A2AToolConfig }
  | { row: "code"; name: string; tool: Tool }
  | { row: "agent"; name: string; agent: AgentConfig };

/** The built-ins whose code is the runtime's (the kind's tools are the kind's). */
type RuntimeBuiltin = Exclude<BuiltinToolName, KindToolName>;

/** What preparing an entry may use: the run's tool cache and MCP servers. */
export interface PrepareEnv {
  /** Per-run cache of tools built from the team file. */
  cache: Map<string, Tool>;
  mcp: McpServers;
  signal: AbortSignal;
  team: ResolvedTeam;
}

/** What building an entry may use, beyond what preparing it made ready. */
export interface BuildEnv extends PrepareEnv {
  /** The Plan Tool of the run's store. */
  planTool(): PlanTool;
  callAgent: CallAgentFromTool;
}

interface Row<E extends ToolEntry> {
  /** Make ready what `build` needs, before the step starts (`build` is synchronous, like `ctx.tools`). */
  prepare?(entry: E, env: PrepareEnv): Promise<void>;
  /** The runnable tools the entry offers: none for a kind's tool its kind does not bind. */
  build(entry: E, env: BuildEnv): Tool[];
  /** The names of the tools it offers, known once it is prepared: its own name, or an MCP server's tools. */
  names?(entry: E, env: PrepareEnv): string[];
  /** Where it comes from, as `runtime tools` shows it. */
  source(entry: E): string;
}

/**
 * Code imported the first time an agent lists a tool that needs it, once per
 * process: a run pays nothing for tool kinds it does not use (command and http
 * tools alone load node:child_process, node:http, node:https and node:dns,
 * ~20 ms of an `exec`: docs/performance.md).
 */
function lazyCode<T>(what: string, load: () => Promise<T>): { load(): Promise<void>; get(): T } {
  let module: T | undefined;
  return {
    load: async () => {
      module ??= await load();
    },
    get: () => {
      if (module === undefined) unreachable(`the code of the ${what} was not loaded before use`);
      return module;
    },
  };
}

const code = {
  calculator: lazyCode("calculator", () => import("../tools/builtin/calculator.js")),
  terminate: lazyCode("terminate tool", () => import("../tools/builtin/terminate.js")),
  knowledge: lazyCode("knowledge_lookup tool", () => import("../tools/builtin/knowledge-lookup.js")),
  plan: lazyCode("Plan Tool's methods", () => import("../plan/tools.js")),
  command: lazyCode("command tools", () => import("../tools/command.js")),
  http: lazyCode("http tools", () => import("../tools/http.js")),
  a2a: lazyCode("A2A agents as tools", () => import("../tools/a2a.js")),
};

/** A built-in's code and how a tool is made of it. */
interface BuiltinCode {
  code: { load(): Promise<void> };
  build(env: BuildEnv): Tool;
}

/** The Plan Tool's methods bound to the run's store, made once per `BuildEnv`. */
const planTools = new WeakMap<BuildEnv, Map<string, Tool>>();
function planMethod(name: string): BuiltinCode {
  return {
    code: code.plan,
    build: (env) => {
      let tools = planTools.get(env);
      if (!tools) {
        tools = new Map(
          code.plan
            .get()
            .createPlanTools(env.planTool())
            .map((t) => [t.name, t]),
        );
        planTools.set(env, tools);
      }
      return tools.get(name) ?? unreachable(`the Plan Tool has no method "${name}"`);
    },
  };
}

/** The runtime's built-ins, one row each (the compiler keeps it equal to src/config/tool-names.ts). */
const BUILTINS: Record<RuntimeBuiltin, BuiltinCode> = {
  calculator: { code: code.calculator, build: () => code.calculator.get().calculatorTool() },
  terminate: { code: code.terminate, build: () => code.terminate.get().terminateTool() },
  knowledge_lookup: { code: code.knowledge, build: (env) => code.knowledge.get().knowledgeLookupTool(env.team.knowledge) },
  ...(Object.fromEntries(PLAN_TOOL_NAMES.map((name) => [name, planMethod(name)])) as Record<(typeof PLAN_TOOL_NAMES)[number], BuiltinCode>),
};

const ROWS: { [R in ToolEntry["row"]]: Row<Extract<ToolEntry, { row: R }>> } = {
  kind: { build: (e) => (e.tool ? [e.tool] : []), source: () => "kind" },
  builtin: {
    prepare: (e) => BUILTINS[e.builtin].code.load(),
    // An alias of a built-in (`plan_status: {builtin: get_plan_status}`): its implementation, the declared name and limits.
    build: (e, env) => {
      const tool = BUILTINS[e.builtin].build(env);
      return [e.declared ? withDeclaredLimits(tool, e.declared) : tool];
    },
    source: (e) => (e.declared ? "builtin" : BUILTIN_TOOLS[e.builtin].source),
  },
  command: {
    prepare: () => code.command.load(),
    build: (e, env) => [cached(env.cache, e.name, () => code.command.get().commandTool(e.config))],
    source: () => "command",
  },
  http: {
    prepare: () => code.http.load(),
    build: (e, env) => [cached(env.cache, e.name, () => code.http.get().httpTool(e.config))],
    source: () => "http",
  },
  a2a: {
    prepare: () => code.a2a.load(),
    build: (e, env) => [cached(env.cache, e.name, () => code.a2a.get().a2aTool(e.config))],
    source: (e) => `a2a ${e.config.url}`,
  },
  module: {
    // Imported once per process (src/tools/module.ts), built once per run.
    prepare: async (e, env) => {
      if (!env.cache.has(e.name)) env.cache.set(e.name, moduleTool(e.config, await loadToolModule(e.config.module), env.team.dir));
    },
    build: (e, env) => [env.cache.get(e.name) ?? unreachable(`the module of tool "${e.name}" was not loaded before use`)],
    source: () => "module",
  },
  mcp: {
    // Its server starts once per run, the first time an agent that lists it is prepared.
    prepare: async (e, env) => {
      await env.mcp.tools(e.config, env.signal);
    },
    build: (e, env) => env.mcp.listed(e.name) ?? unreachable(`the MCP server "${e.name}" was not started before its tools were asked for`),
    names: (e, env) => (env.mcp.listed(e.name) ?? []).map((t) => t.name),
    source: (e) => `mcp ${e.name}`,
  },
  code: { build: (e) => [e.tool], source: () => "code" },
  agent: {
    build: (e, env) => {
      const tool = agentAsTool(e.agent, env.callAgent);
      return [isAssignee(env.team, e.name) ? guardedByPlan(tool, env.planTool) : tool];
    },
    source: () => "agent",
  },
};

/** The registry's row for an entry. */
export function rowOf<E extends ToolEntry>(entry: E): Row<E> {
  return ROWS[entry.row] as unknown as Row<E>;
}

/** The names of the tools an entry offers once prepared (an MCP server's tools, else its own name). */
export function offeredNames(entry: ToolEntry, env: PrepareEnv): string[] {
  return rowOf(entry).names?.(entry, env) ?? [entry.name];
}

/**
 * What `name` stands for, in the one resolution order: a tool the agent's
 * kind binds under a kind-bound name (`bound`); then, as
 * src/config/tool-names.ts orders them, a tool under `tools:` (an `mcp` entry
 * being every tool its server offers), a tool given in code, another agent, a
 * built-in. A kind-bound name the kind does not bind stands for nothing,
 * unless the team declares a tool of another type under it. Undefined for a
 * name nothing holds (one validation has refused).
 */
export function entryOf(
  name: string,
  team: ResolvedTeam,
  given: ReadonlyMap<string, Tool>,
  bound: ReadonlyMap<string, Tool> = new Map(),
): ToolEntry | undefined {
  const declared = Object.hasOwn(team.tools, name) ? team.tools[name] : undefined;
  if (isKindToolName(name) && (bound.has(name) || declared === undefined || declared.type === "builtin")) return { row: "kind", name, tool: bound.get(name) };
  const names: TeamNames = { tool: () => declared !== undefined, code: (n) => given.has(n), agent: (n) => Object.hasOwn(team.agents, n) };
  switch (holderOf(name, names)) {
    case "tool":
      return declaredEntry(declared as ToolConfig);
    case "code":
      return { row: "code", name, tool: given.get(name) as Tool };
    case "agent":
      return { row: "agent", name, agent: team.agents[name] as AgentConfig };
    case "builtin":
      return { row: "builtin", name, builtin: name as RuntimeBuiltin };
    case undefined:
      return undefined;
  }
}

function declaredEntry(config: ToolConfig): ToolEntry {
  const name = config.name;
  switch (config.type) {
    case "builtin": {
      const builtin = config.builtin;
      if (!isBuiltinToolName(builtin)) {
        // The schema allows none; a team built in code might.
        throw new RuntimeError("CONFIG_INVALID", `tool "${name}": unknown builtin "${builtin}" (built-in tools: ${BUILTIN_TOOL_NAMES.join(", ")})`);
      }
      return isKindToolName(builtin) ? { row: "kind", name, tool: undefined } : { row: "builtin", name, builtin, declared: config };
    }
    case "command":
      return { row: "command", name, config };
    case "http":
      return { row: "http", name, config };
    case "module":
      return { row: "module", name, config };
    case "mcp":
      return { row: "mcp", name, config };
    case "a2a":
      return { row: "a2a", name, config };
  }
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
      const query = typeof args["query"] === "string" ? args["query"] : "";
      return rules ? rules.guardAgentCall(tool.name, ctx.scope.agent_id, query, () => tool.execute(args, ctx)) : tool.execute(args, ctx);
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
