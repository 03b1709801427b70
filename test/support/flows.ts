import { OPENAI_MODEL_DEFAULTS } from "./team.js";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentConfig, PlanAndSolveFlowConfig, PlanSolverConfig, ReactAgentConfig, ResolvedTeam } from "../../src/config/types.js";
import type { RunEvent } from "../../src/events/types.js";
import { runTeam, type RunOptions, type RunResult } from "../../src/engine/run-team.js";
import type { ChatBody, MessageReply, Reply } from "./openai-server.js";

/** A react agent whose system prompt names its role, so the test server can tell agents apart. */
export function reactAgent(name: string): ReactAgentConfig {
  return { name, kind: "react", description: `${name} agent`, model: "default", max_iteration: 4, prompt: `ROLE:${name}`, tools: [], approval: [] };
}

export function flowAgent(overrides: Partial<PlanAndSolveFlowConfig> = {}): PlanAndSolveFlowConfig {
  return {
    name: "flow",
    kind: "plan_and_solve_flow",
    description: "plan and solve",
    model: "default",
    max_iteration: 30,
    tools: [],
    approval: [],
    planner: "planner",
    executor: "executor",
    replanner: "replanner",
    enable_replanner: false,
    max_replan_rounds: 30,
    ...overrides,
  };
}

export function solverFlow(overrides: Partial<PlanSolverConfig> = {}): PlanSolverConfig {
  return {
    name: "pipeline",
    kind: "plan_solver",
    description: "plan, solve in parallel, aggregate",
    model: "default",
    max_iteration: 30,
    tools: [],
    approval: [],
    planner: "planner",
    solver: "solver",
    aggregator: "aggregator",
    concurrency: 4,
    ...overrides,
  };
}

/** A resolved team whose one model is the test server, reached through the real `openai` client. */
export function makeTeam(url: string, entry: AgentConfig, helpers: string[]): ResolvedTeam {
  const agents: Record<string, AgentConfig> = { [entry.name]: entry };
  for (const name of helpers) agents[name] = reactAgent(name);
  return {
    version: 1,
    name: "flows-test",
    description: "",
    file: "/nonexistent/team.yaml",
    dir: "/nonexistent",
    entry: entry.name,
    models: {
      default: {
        name: "default",
        provider: "openai",
        model: "test-model",
        base_url: url,
        api_key: "test-key",
        timeout_ms: 10_000,
        max_retries: 0,
        stream: false,
        ...OPENAI_MODEL_DEFAULTS,
      },
    },
    tools: {},
    agents,
    workflows: {},
  };
}

/** The react protocol's ANSWER reply. */
export function answer(text: string, delay_ms?: number): MessageReply {
  const content = JSON.stringify({ observe: "", thought: "", action: { result: { action_type: "ANSWER", output: { answer: text } } } });
  return delay_ms ? { content, delay_ms } : { content };
}

/** A failure the `openai` client does not retry (max_retries 0 anyway). */
export function badRequest(message: string): Reply {
  return { status: 400, error: { message, type: "invalid_request_error" } };
}

/** The role named by a request's system prompt (`ROLE:planner`), or "model" for a bare model call. */
export function roleOf(body: ChatBody): string {
  const system = body.messages?.find((m) => m.role === "system")?.content;
  const match = typeof system === "string" ? /^ROLE:(\w+)/.exec(system) : null;
  return match?.[1] ?? "model";
}

/** The request's user message: for a react agent, the query it was called with. */
export function queryOf(body: ChatBody): string {
  const user = body.messages?.find((m) => m.role === "user")?.content;
  return typeof user === "string" ? user : "";
}

export function traceDir(): string {
  return mkdtempSync(join(tmpdir(), "flows-trace-"));
}

/** Run a team to its end, collecting every event. */
export async function runAll(team: ResolvedTeam, options: RunOptions): Promise<{ result: RunResult; events: RunEvent[] }> {
  const events: RunEvent[] = [];
  const result = await runTeam(team, { ...options, sinks: [(e) => events.push(e), ...(options.sinks ?? [])] }).result;
  return { result, events };
}

/** Events of one type, narrowed. */
export function ofType<T extends RunEvent["type"]>(events: RunEvent[], type: T): Extract<RunEvent, { type: T }>[] {
  return events.filter((e): e is Extract<RunEvent, { type: T }> => e.type === type);
}
