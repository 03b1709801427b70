/**
 * Builds the ResolvedTeam from a team that passed the schema (plain defaults
 * already filled by ajv) and the reference checks: paths made absolute,
 * computed defaults applied (decided in defaults.ts), prompt files read.
 */
import { resolve } from "node:path";
import type { AgentConfig, Guardrail, McpToolConfig, ModelConfig, ResolvedTeam, Sandbox, ToolConfig, Workflow } from "./types.js";
import type { References } from "./references.js";
import type { RawAgent, RawGuardrail, RawMcpServer, RawModel, RawTeam, RawTool, RawWorkflow } from "./raw-team.js";
import { agentModel, builtinParameters, commandCwd, entryAgent, flowReplanner, streamIdleTimeout } from "./defaults.js";
import { unreachable } from "../errors.js";

/** The ResolvedTeam of a team that passed the schema and the reference checks. */
export function resolveTeam(team: RawTeam, file: string, dir: string, refs: References): ResolvedTeam {
  const modelNames = new Set(Object.keys(team.models));
  return {
    version: 1,
    name: team.name,
    description: team.description,
    file,
    dir,
    entry: checked(entryAgent(team.entry, Object.keys(team.agents)), "the team has no agent"),
    models: mapValues(team.models, (name, raw) => resolveModel(name, raw, dir)),
    tools: mapValues(team.tools, (name, raw) => resolveTool(name, raw, dir)),
    agents: mapValues(team.agents, (name, raw) => resolveAgent(name, raw, dir, modelNames, refs, team.guardrails ?? [])),
    workflows: mapValues(team.workflows, (id, raw) => resolveWorkflow(id, raw)),
    ...(team.budget ? { budget: { ...team.budget } } : {}),
    ...(team.knowledge
      ? {
          knowledge: {
            paths: team.knowledge.paths.map((path) => resolve(dir, path)),
            top_k: team.knowledge.top_k,
            dir,
            ...(team.allow_outside_paths ? {} : { confined_to: dir }),
          },
        }
      : {}),
  };
}

function resolveModel(name: string, raw: RawModel, dir: string): ModelConfig {
  if (raw.provider === "scripted") return { name, provider: "scripted", model: raw.model, script: resolve(dir, raw.script), stream: raw.stream };
  const { base_url, api_key, temperature, max_tokens, max_tokens_param, top_p, seed, roles, context_window, compaction } = raw;
  return {
    name,
    provider: raw.provider,
    model: raw.model,
    cache: raw.cache ?? raw.provider === "anthropic",
    api: raw.api,
    timeout_ms: raw.timeout_ms,
    max_retries: raw.max_retries,
    stream: raw.stream,
    idle_timeout_ms: streamIdleTimeout(raw.idle_timeout_ms, raw.timeout_ms),
    max_retry_wait_ms: raw.max_retry_wait_ms,
    headers: raw.headers,
    extra_body: raw.extra_body,
    fallback: raw.fallback,
    attachments: raw.attachments,
    structured_output: raw.structured_output,
    compact_at: raw.compact_at,
    ...(context_window !== undefined ? { context_window } : {}),
    ...(compaction ? { compaction: { model: compaction.model } } : {}),
    ...(top_p !== undefined ? { top_p } : {}),
    ...(seed !== undefined ? { seed } : {}),
    ...(roles !== undefined ? { roles } : {}),
    ...(raw.price ? { price: { ...raw.price } } : {}),
    // An empty value (e.g. `${OPENAI_BASE_URL:-}`) means "let the client decide".
    ...(base_url ? { base_url } : {}),
    ...(api_key ? { api_key } : {}),
    ...(temperature !== undefined ? { temperature } : {}),
    ...(max_tokens !== undefined ? { max_tokens } : {}),
    ...(max_tokens_param !== undefined ? { max_tokens_param } : {}),
  };
}

/** argv[0] that looks like a relative path (`./x`, `../x`) is resolved against the team file. */
function resolveArgv(argv: readonly string[], dir: string): string[] {
  const [program, ...rest] = argv;
  if (program === undefined) return [];
  return [program.startsWith(".") ? resolve(dir, program) : program, ...rest];
}

function resolveTool(name: string, raw: RawTool, dir: string): ToolConfig {
  const common = {
    name,
    description: raw.description,
    timeout_ms: raw.timeout_ms,
    max_output_bytes: raw.max_output_bytes,
    ...(raw.effect !== undefined ? { effect: raw.effect } : {}),
    ...(raw.approval !== undefined ? { approval: raw.approval } : {}),
  };
  if ("mcp" in raw) return resolveMcp(common, raw.mcp, dir);
  if ("a2a" in raw) return { ...common, type: "a2a", parameters: A2A_PARAMETERS, url: raw.a2a.url, headers: raw.a2a.headers };
  const base = { ...common, parameters: "builtin" in raw || "module" in raw ? builtinParameters() : raw.parameters };
  if ("builtin" in raw) return { ...base, type: "builtin", builtin: raw.builtin };
  if ("command" in raw) {
    const sandbox = resolveSandbox(raw.sandbox, dir);
    return { ...base, type: "command", command: resolveArgv(raw.command, dir), cwd: commandCwd(raw.cwd, dir), env: raw.env, ...(sandbox ? { sandbox } : {}) };
  }
  if ("module" in raw) return { ...base, type: "module", module: resolve(dir, raw.module) };
  return { ...base, type: "http", url: raw.http.url, method: raw.http.method, headers: raw.http.headers, allow_private: raw.http.allow_private };
}

/** The one argument of an A2A agent as a tool. */
const A2A_PARAMETERS = {
  type: "object",
  properties: { message: { type: "string", minLength: 1, description: "What to ask the agent, in full: it knows nothing of this conversation." } },
  required: ["message"],
  additionalProperties: false,
} as const;

function resolveMcp(
  common: Pick<McpToolConfig, "name" | "description" | "timeout_ms" | "max_output_bytes" | "effect" | "approval">,
  raw: RawMcpServer,
  dir: string,
): McpToolConfig {
  const server: McpToolConfig["server"] =
    "command" in raw
      ? { transport: "stdio", command: resolveArgv(raw.command, dir), cwd: dir, env: raw.env, ...sandboxOf(raw.sandbox, dir) }
      : { transport: "http", url: raw.url, headers: raw.headers };
  return {
    ...common,
    type: "mcp",
    server,
    connect_timeout_ms: raw.connect_timeout_ms,
    ...(raw.tools !== undefined ? { tools: [...raw.tools] } : {}),
  };
}

function resolveAgent(name: string, raw: RawAgent, dir: string, modelNames: ReadonlySet<string>, refs: References, team: RawGuardrail[]): AgentConfig {
  const common = {
    name,
    description: raw.description,
    model: checked(agentModel(raw.model, modelNames), `agent '${name}' has no model`),
    max_iteration: raw.max_iteration,
    tools: [...raw.tools],
    approval: Object.keys(raw.approval),
    ...(raw.budget ? { budget: { ...raw.budget } } : {}),
    ...(raw.compaction ? { compaction: { model: raw.compaction.model } } : {}),
    ...guardrailsOf([...team, ...(raw.guardrails ?? [])], dir),
    ...(raw.system_prompt !== undefined
      ? { system_prompt_file: resolve(dir, raw.system_prompt), prompt: checked(refs.prompts.get(name), `the prompt file of '${name}' was not read`) }
      : raw.prompt !== undefined
        ? { prompt: raw.prompt }
        : {}),
  };
  switch (raw.kind) {
    case "react":
      return { ...common, kind: "react" };
    case "plan_and_solve":
      return {
        ...common,
        kind: "plan_and_solve",
        todo_complete_after: raw.todo_complete_after,
        todo_block_after: raw.todo_block_after,
        plan: raw.plan,
        verify: raw.verify,
        verifier: raw.verifier ?? common.model,
        max_verify_rounds: raw.max_verify_rounds,
      };
    case "plan_and_solve_flow":
      return {
        ...common,
        kind: "plan_and_solve_flow",
        planner: raw.planner,
        executor: raw.executor,
        enable_replanner: raw.enable_replanner,
        max_replan_rounds: raw.max_replan_rounds,
        replanner: flowReplanner(raw),
        ...(raw.pre_plan_steps !== undefined ? { pre_plan_steps: [...raw.pre_plan_steps] } : {}),
        ...(raw.parser !== undefined ? { parser: resolve(dir, raw.parser) } : {}),
      };
    case "plan_solver":
      return {
        ...common,
        kind: "plan_solver",
        planner: raw.planner,
        solver: raw.solver,
        concurrency: raw.concurrency,
        ...(raw.aggregator !== undefined ? { aggregator: raw.aggregator } : {}),
      };
    case "sop":
      return { ...common, kind: "sop", workflow: raw.workflow, strategist: raw.strategist };
  }
}

function resolveWorkflow(id: string, raw: RawWorkflow): Workflow {
  return {
    id,
    name: raw.name,
    description: raw.description,
    order: raw.order,
    steps: raw.steps.map((step) => ({
      step_id: step.step_id,
      name: step.name,
      description: step.description,
      tasks: step.tasks.map((task) => ({
        task_id: task.task_id,
        name: task.name,
        assignee: task.assignee,
        description: task.description,
        optional: task.optional,
      })),
    })),
  };
}

/** A new record with `f` applied to each entry of `record`, keys kept in order. */
function mapValues<T, U>(record: Record<string, T>, f: (key: string, value: T) => U): Record<string, U> {
  return Object.fromEntries(Object.entries(record).map(([key, value]) => [key, f(key, value)]));
}

/** A value the schema or the reference checks guarantee; its absence is a bug here, not a problem of the file. */
function checked<T>(value: T | undefined, what: string): T {
  if (value === undefined) unreachable(`resolving the team: ${what}, yet it passed the checks`);
  return value;
}

function sandboxOf(raw: unknown, dir: string): { sandbox?: Sandbox } {
  const sandbox = resolveSandbox(raw, dir);
  return sandbox ? { sandbox } : {};
}

/** `sandbox: true` or `{network, writable}` (the schema admits nothing else), paths resolved against the team file. */
function resolveSandbox(raw: unknown, dir: string): Sandbox | undefined {
  if (raw === undefined || raw === false) return undefined;
  if (raw === true) return { network: false, writable: [] };
  const given = raw as { network?: boolean; writable?: string[] };
  return { network: given.network ?? false, writable: (given.writable ?? []).map((path) => resolve(dir, path)) };
}

function guardrailsOf(raw: RawGuardrail[], dir: string): { guardrails?: Guardrail[] } {
  return raw.length > 0 ? { guardrails: raw.map((g) => resolveGuardrail(g, dir)) } : {};
}

/** A guardrail as the engine runs it (docs/guardrails.md): its one check, paths absolute. */
function resolveGuardrail(raw: RawGuardrail, dir: string): Guardrail {
  const check = guardrailCheck(raw, dir);
  return {
    name: raw.name ?? `${check.kind}:${raw.on}`,
    on: raw.on,
    ...(raw.tools ? { tools: [...raw.tools] } : {}),
    check,
    action: raw.action,
    max_retries: raw.max_retries ?? 1,
  };
}

function guardrailCheck(raw: RawGuardrail, dir: string): Guardrail["check"] {
  if (raw.deny) return { kind: "deny", patterns: [...raw.deny] };
  if (raw.max_chars !== undefined) return { kind: "max_chars", max: raw.max_chars };
  if (raw.json_schema) return { kind: "json_schema", schema: raw.json_schema };
  if (raw.pii) return { kind: "pii", types: [...raw.pii] };
  if (raw.command)
    return { kind: "command", command: resolveArgv(raw.command, dir), cwd: dir, timeout_ms: raw.timeout_ms ?? 10_000, ...sandboxOf(raw.sandbox, dir) };
  if (raw.module !== undefined) return { kind: "module", path: resolve(dir, raw.module) };
  if (raw.model !== undefined && raw.rubric !== undefined) return { kind: "model", model: raw.model, rubric: raw.rubric };
  return unreachable("a guardrail with no check passed the reference checks");
}
