/**
 * Builds the ResolvedTeam from a value that passed the schema (defaults
 * already filled by ajv) and the reference checks: paths made absolute,
 * models chosen, prompt files read. The only place defaults are decided.
 */
import { resolve } from "node:path";
import type {
  AgentConfig,
  ModelConfig,
  ResolvedTeam,
  ToolConfig,
  Workflow,
  JsonSchema,
} from "./types.js";
import type { References } from "./references.js";
import { isRecord, records, type RawObject } from "./raw.js";

/** The ResolvedTeam of a team that passed the schema and the reference checks. */
export function resolveTeam(team: RawObject, file: string, dir: string, refs: References): ResolvedTeam {
  const agents = Object.fromEntries(records(team.agents).map(([name, raw]) => [name, resolveAgent(name, raw, dir, refs)]));
  const firstAgent = Object.keys(agents)[0] ?? "";
  return {
    version: 1,
    name: team.name as string,
    description: team.description as string,
    file,
    dir,
    entry: (team.entry as string | undefined) ?? firstAgent,
    models: Object.fromEntries(records(team.models).map(([name, raw]) => [name, resolveModel(name, raw, dir)])),
    tools: Object.fromEntries(records(team.tools).map(([name, raw]) => [name, resolveTool(name, raw, dir)])),
    agents,
    workflows: Object.fromEntries(records(team.workflows).map(([id, raw]) => [id, resolveWorkflow(id, raw)])),
  };
}

function resolveModel(name: string, raw: RawObject, dir: string): ModelConfig {
  if (raw.provider === "scripted") {
    return { name, provider: "scripted", model: raw.model as string, script: resolve(dir, raw.script as string) };
  }
  const model: ModelConfig = {
    name,
    provider: "openai",
    model: raw.model as string,
    timeout_ms: raw.timeout_ms as number,
    max_retries: raw.max_retries as number,
    stream: raw.stream as boolean,
  };
  // An empty value (e.g. `${OPENAI_BASE_URL:-}`) means "let the client decide".
  if (typeof raw.base_url === "string" && raw.base_url !== "") model.base_url = raw.base_url;
  if (typeof raw.api_key === "string" && raw.api_key !== "") model.api_key = raw.api_key;
  if (typeof raw.temperature === "number") model.temperature = raw.temperature;
  if (typeof raw.max_tokens === "number") model.max_tokens = raw.max_tokens;
  return model;
}

/** argv[0] that looks like a relative path (`./x`, `../x`) is resolved against the team file. */
function resolveArgv(argv: string[], dir: string): string[] {
  const [program, ...rest] = argv;
  if (program === undefined) return [];
  return [program.startsWith(".") ? resolve(dir, program) : program, ...rest];
}

function resolveTool(name: string, raw: RawObject, dir: string): ToolConfig {
  const base = {
    name,
    description: raw.description as string,
    parameters: (isRecord(raw.parameters) ? raw.parameters : { type: "object", properties: {} }) as JsonSchema,
    timeout_ms: raw.timeout_ms as number,
    max_output_bytes: raw.max_output_bytes as number,
  };
  if (typeof raw.builtin === "string") return { ...base, type: "builtin", builtin: raw.builtin };
  if (Array.isArray(raw.command)) {
    return {
      ...base,
      type: "command",
      command: resolveArgv(raw.command as string[], dir),
      cwd: typeof raw.cwd === "string" ? resolve(dir, raw.cwd) : dir,
      env: raw.env as Record<string, string>,
    };
  }
  if (isRecord(raw.http)) {
    const http = raw.http;
    return {
      ...base,
      type: "http",
      url: http.url as string,
      method: http.method as "GET" | "POST",
      headers: http.headers as Record<string, string>,
    };
  }
  const mcp = raw.mcp as RawObject;
  return { ...base, type: "mcp", server: resolveArgv(mcp.server as string[], dir), tool: mcp.tool as string };
}

function resolveAgent(name: string, raw: RawObject, dir: string, refs: References): AgentConfig {
  const base = {
    name,
    description: raw.description as string,
    model: refs.models.get(name) ?? "default",
    max_iteration: raw.max_iteration as number,
    tools: [...(raw.tools as string[])],
  };
  const prompt: { system_prompt_file?: string; prompt?: string } = {};
  if (typeof raw.system_prompt === "string") {
    prompt.system_prompt_file = resolve(dir, raw.system_prompt);
    prompt.prompt = refs.prompts.get(name) ?? "";
  } else if (typeof raw.prompt === "string") {
    prompt.prompt = raw.prompt;
  }
  const common = { ...base, ...prompt };
  switch (raw.kind) {
    case "plan_and_solve":
      return {
        ...common,
        kind: "plan_and_solve",
        todo_complete_after: raw.todo_complete_after as number,
        todo_block_after: raw.todo_block_after as number,
      };
    case "plan_and_solve_flow": {
      const agent: AgentConfig = {
        ...common,
        kind: "plan_and_solve_flow",
        planner: raw.planner as string,
        executor: raw.executor as string,
        enable_replanner: raw.enable_replanner as boolean,
        max_replan_rounds: raw.max_replan_rounds as number,
      };
      if (typeof raw.replanner === "string") agent.replanner = raw.replanner;
      if (Array.isArray(raw.pre_plan_steps)) agent.pre_plan_steps = [...(raw.pre_plan_steps as string[])];
      return agent;
    }
    case "plan_solver": {
      const agent: AgentConfig = {
        ...common,
        kind: "plan_solver",
        planner: raw.planner as string,
        solver: raw.solver as string,
        concurrency: raw.concurrency as number,
      };
      if (typeof raw.aggregator === "string") agent.aggregator = raw.aggregator;
      return agent;
    }
    case "sop":
      return { ...common, kind: "sop", workflow: raw.workflow as string, strategist: raw.strategist as string };
    default:
      return { ...common, kind: "react" };
  }
}

function resolveWorkflow(id: string, raw: RawObject): Workflow {
  return {
    id,
    name: raw.name as string,
    description: raw.description as string,
    steps: (raw.steps as RawObject[]).map((step) => ({
      step_id: step.step_id as string,
      name: step.name as string,
      description: step.description as string,
      tasks: (step.tasks as RawObject[]).map((task) => ({
        task_id: task.task_id as string,
        name: task.name as string,
        assignee: task.assignee as string,
        description: task.description as string,
        optional: task.optional as boolean,
      })),
    })),
  };
}
