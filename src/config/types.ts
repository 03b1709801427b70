/**
 * The resolved team: what `loadTeam` returns. Every default is already
 * applied here (defaults.ts lists them), every path is absolute, every
 * reference has been checked; nothing downstream applies a default again.
 */

export type JsonSchema = Record<string, unknown>;

/**
 * A model served over HTTP: through the `openai` client or Anthropic's
 * (`anthropic`) (docs/model-servers.md). The fields
 * are shared; `api`, `max_tokens_param`, `roles` and `structured_output`
 * concern `openai` alone.
 */
export interface OpenAIModelConfig {
  name: string;
  provider: "openai" | "anthropic";
  model: string;
  /** The API spoken (docs/model-servers.md#the-responses-api). @default "chat_completions" */
  api: "chat_completions" | "responses";
  /** Undefined: the openai client's own OPENAI_BASE_URL / default. */
  base_url?: string;
  /** Undefined: the openai client's own OPENAI_API_KEY. Never logged. */
  api_key?: string;
  temperature?: number;
  max_tokens?: number;
  /** The Chat Completions field carrying `max_tokens`; unset: by model id (`maxTokensParam` in src/models/dialect.ts). */
  max_tokens_param?: "max_tokens" | "max_completion_tokens";
  top_p?: number;
  seed?: number;
  /** Deadline of a whole model call, retries included. @default 60000 */
  timeout_ms: number;
  /** @default 2 */
  max_retries: number;
  /** Stream replies (llm.delta); `false` asks for whole replies. @default true */
  stream: boolean;
  /** Longest silence between two streamed chunks. @default min(timeout_ms, 30000) */
  idle_timeout_ms: number;
  /** Longest `retry-after` obeyed; longer fails at once. @default 30000 */
  max_retry_wait_ms: number;
  /** Extra headers on every request; secret-named values are masked. */
  headers: Record<string, string>;
  /** Fields merged into every request body. */
  extra_body: Record<string, unknown>;
  /** US dollars per million prompt, cached prompt and completion tokens, for `budget.max_cost_usd`. */
  price?: { input_per_mtok: number; output_per_mtok: number; cached_input_per_mtok?: number; cache_write_per_mtok?: number };
  /** Prompt caching asked of the server (docs/model-servers.md#prompt-caching). @default true for `anthropic`, false for `openai` */
  cache: boolean;
  /** The server takes `response_format: json_schema` (strict). @default false */
  structured_output: boolean;
  /** A role layout forced from the first request; unset: detected from the server's refusal. */
  roles?: "alternate" | "no_system";
  /** What the model reads besides text (docs/attachments.md). @default [] */
  attachments: ("image" | "pdf")[];
  /** Models (by name) tried in order when this one is unavailable. */
  fallback: string[];
  /** The context window in tokens; unset: requests are not counted (docs/context.md). */
  context_window?: number;
  /** The share of `context_window` a request may fill before it is compacted. @default 0.8 */
  compact_at: number;
  /** The model, by name, that writes the summary when a request is compacted; unset: this one. */
  compaction?: { model: string };
}

export interface ScriptedModelConfig {
  name: string;
  provider: "scripted";
  /** The model name reported in events. @default "scripted" */
  model: string;
  /** Absolute path of the YAML script. */
  script: string;
  /** Give each reply in pieces (llm.delta), as a streaming model does. @default false */
  stream?: boolean;
}

export type ModelConfig = OpenAIModelConfig | ScriptedModelConfig;

/**
 * What calling a tool does to the world (docs/durable-runs.md): `read` changes
 * nothing, `idempotent` may change something but twice is the same as once,
 * `write` must not run twice. On resume a call that started and has no result
 * is run again only when it is not `write`.
 */
export type ToolEffect = "read" | "idempotent" | "write";

interface ToolConfigBase {
  name: string;
  description: string;
  /** @default 30000 */
  timeout_ms: number;
  /** Cap on a tool's output, in bytes. @default 65536 */
  max_output_bytes: number;
  /** What a call does (docs/durable-runs.md). @default write (a built-in: its own) */
  effect?: ToolEffect;
  /** Every call waits for a person's decision. */
  approval?: "required";
}

/** A tool of one name whose arguments the team file (or the built-in) describes. */
interface SingleToolConfigBase extends ToolConfigBase {
  /** JSON Schema of the arguments. */
  parameters: JsonSchema;
}

export interface BuiltinToolConfig extends SingleToolConfigBase {
  type: "builtin";
  builtin: string;
}

export interface CommandToolConfig extends SingleToolConfigBase {
  type: "command";
  /** Argument vector; argv[0] is resolved like a path if it starts with `.`. Never a shell. */
  command: string[];
  /** Working directory (absolute). @default the team file's directory */
  cwd: string;
  env: Record<string, string>;
  /** Run under bubblewrap (docs/security.md#sandboxes); unset: not sandboxed. */
  sandbox?: Sandbox;
}

/** A bubblewrap sandbox: the network or not, and the paths (absolute) writable besides the working folder. */
export interface Sandbox {
  network: boolean;
  writable: string[];
}

export interface HttpToolConfig extends SingleToolConfigBase {
  type: "http";
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  /** May reach loopback, private and link-local addresses. @default false */
  allow_private: boolean;
}

/**
 * A remote A2A agent as a tool (docs/protocols.md#a2a-agents-as-tools): one
 * `message` argument (its `parameters`, fixed), the remote task's text as
 * the result.
 */
export interface A2AToolConfig extends SingleToolConfigBase {
  type: "a2a";
  /** Base URL of the agent; its card is at URL/.well-known/agent-card.json. */
  url: string;
  headers: Record<string, string>;
}

/** An MCP server started as a program, speaking MCP on its stdin and stdout. */
export interface McpStdioServer {
  transport: "stdio";
  /** Argument vector; argv[0] is resolved like a path if it starts with `.`. Never a shell. */
  command: string[];
  /** The team file's directory. */
  cwd: string;
  env: Record<string, string>;
  /** Run under bubblewrap (docs/security.md#sandboxes); unset: not sandboxed. */
  sandbox?: Sandbox;
}

/** An MCP server reached over Streamable HTTP. */
export interface McpHttpServer {
  transport: "http";
  url: string;
  headers: Record<string, string>;
}

/**
 * An MCP server (docs/mcp.md): one entry that an agent's allow-list names and
 * that expands, at run time, into the tools the server lists. `timeout_ms`
 * and `max_output_bytes` apply to each of them.
 */
export interface McpToolConfig extends ToolConfigBase {
  type: "mcp";
  server: McpStdioServer | McpHttpServer;
  /** Offer only these of the server's tools; undefined offers every one. */
  tools?: string[];
  /** Start, handshake and tool listing must be done within this. @default 30000 */
  connect_timeout_ms: number;
}

/** A tool declaration that is one tool (every type but `mcp`). */
export type SingleToolConfig = BuiltinToolConfig | CommandToolConfig | HttpToolConfig | ModuleToolConfig | A2AToolConfig;

export type ToolConfig = SingleToolConfig | McpToolConfig;

/**
 * A tool written as an ES module (docs/code-tools.md). Like a built-in, its
 * `parameters` here are the empty object schema: at run time it keeps the
 * module's own, and its own description unless `description` is given.
 */
export interface ModuleToolConfig extends SingleToolConfigBase {
  type: "module";
  /** Absolute path of the module. */
  module: string;
}

export type AgentKind = "react" | "plan_and_solve" | "plan_and_solve_flow" | "plan_solver" | "sop";

/** Limits on what a run (or one agent's step) may spend (docs/budgets.md). */
export interface Budget {
  max_tokens?: number;
  max_model_calls?: number;
  max_tool_calls?: number;
  max_seconds?: number;
  max_cost_usd?: number;
}

interface AgentConfigBase {
  name: string;
  kind: AgentKind;
  description: string;
  /** Resolved model name. @default the model named `default`, else the only model */
  model: string;
  /** @default 30 */
  max_iteration: number;
  /** Absolute path of the Handlebars system prompt, or undefined when `prompt` is inline. */
  system_prompt_file?: string;
  /** Inline Handlebars template text (from `prompt:`), or the text of system_prompt_file. */
  prompt?: string;
  /** The allow-list: names of tools, built-ins and agents. */
  tools: string[];
  /** Tools this agent may call only with a person's approval. @default [] */
  approval: string[];
  /** What one step of this agent may spend, its children included. */
  budget?: Budget;
  /** The team's guardrails, then the agent's own (docs/guardrails.md); unset when there is none. */
  guardrails?: Guardrail[];
  /** The model, by name, that writes this agent's summaries when a request is compacted; unset: the model's own choice (docs/context.md). */
  compaction?: { model: string };
}

import type { GuardrailOn } from "../events/types.js";
export type PiiKind = "email" | "phone" | "credit_card" | "iban";

/** What a guardrail checks; exactly one per guardrail. */
export type GuardrailCheck =
  | { kind: "deny"; patterns: string[] }
  | { kind: "max_chars"; max: number }
  | { kind: "json_schema"; schema: JsonSchema }
  | { kind: "pii"; types: PiiKind[] }
  | { kind: "command"; command: string[]; cwd: string; timeout_ms: number; sandbox?: Sandbox }
  | { kind: "module"; path: string }
  | { kind: "model"; model: string; rubric: string };

/** One guardrail of an agent (docs/guardrails.md). */
export interface Guardrail {
  name: string;
  on: GuardrailOn;
  /** tool_input / tool_output: the tools it checks; unset: every tool. */
  tools?: string[];
  check: GuardrailCheck;
  action: "block" | "redact" | "retry";
  max_retries: number;
}

export interface ReactAgentConfig extends AgentConfigBase {
  kind: "react";
}

export interface PlanAndSolveAgentConfig extends AgentConfigBase {
  kind: "plan_and_solve";
  /** Successful tool calls after which the active todo item is completed. @default 3 */
  todo_complete_after: number;
  /** Recent failures after which the active todo item is blocked. @default 2 */
  todo_block_after: number;
  /** Whether work tools wait for a todo list (docs/plan-and-solve.md#planning-comes-first-and-is-reviewed). @default "required" */
  plan: "required" | "optional";
  /** How VERIFYING checks a final answer (docs/plan-and-solve.md#verifying). @default "checks" */
  verify: "off" | "checks" | "model" | "strict";
  /** The model of the verification call (`verify: model`). @default the agent's model */
  verifier: string;
  /** Failed verifications sent back to SOLVING before the run ends with the verdict. @default 2 */
  max_verify_rounds: number;
}

export interface PlanAndSolveFlowConfig extends AgentConfigBase {
  kind: "plan_and_solve_flow";
  planner: string;
  executor: string;
  /**
   * The agent asked to answer or replan after each step (when enable_replanner).
   * @default the planner
   */
  replanner: string;
  /** @default false */
  enable_replanner: boolean;
  /** @default 30 */
  max_replan_rounds: number;
  pre_plan_steps?: string[];
  /** Absolute path of the module that reads planner and replanner replies (docs/flows.md#parser). */
  parser?: string;
}

export interface PlanSolverConfig extends AgentConfigBase {
  kind: "plan_solver";
  planner: string;
  solver: string;
  aggregator?: string;
  /** @default 4 */
  concurrency: number;
}

export interface SopAgentConfig extends AgentConfigBase {
  kind: "sop";
  workflow: string;
  strategist: string;
}

export type AgentConfig = ReactAgentConfig | PlanAndSolveAgentConfig | PlanAndSolveFlowConfig | PlanSolverConfig | SopAgentConfig;

export interface WorkflowTask {
  task_id: string;
  name: string;
  assignee: string;
  description: string;
  /** @default false */
  optional: boolean;
}

export interface WorkflowStep {
  step_id: string;
  name: string;
  description: string;
  tasks: WorkflowTask[];
}

export interface Workflow {
  /** Key under `workflows:` (the template source, e.g. SAFE_SOP_v9). */
  id: string;
  name: string;
  description: string;
  /** `steps`: a task starts only when the earlier steps have settled; `free`: any order. @default "steps" */
  order: "steps" | "free";
  steps: WorkflowStep[];
}

/** The team's own documents, searched by `knowledge_lookup` (docs/knowledge.md). */
export interface KnowledgeConfig {
  /** Absolute paths of files and folders. */
  paths: string[];
  /** Passages a lookup returns by default. @default 3 */
  top_k: number;
  /** The team file's folder: sources are named relative to it. */
  dir: string;
  /** Files found in folders must lie inside this folder (real paths); unset with allow_outside_paths. */
  confined_to?: string;
}

export interface ResolvedTeam {
  version: 1;
  name: string;
  description: string;
  /** Absolute path of the team file. */
  file: string;
  /** Directory of the team file; relative paths resolve against it. */
  dir: string;
  /** The agent `runtime exec` runs when --agent is not given. @default the first agent declared */
  entry: string;
  models: Record<string, ModelConfig>;
  tools: Record<string, ToolConfig>;
  agents: Record<string, AgentConfig>;
  workflows: Record<string, Workflow>;
  /** What one run may spend in all. */
  budget?: Budget;
  /** Documents for `knowledge_lookup`; unset when the team has none. */
  knowledge?: KnowledgeConfig;
  /** What loads but is likely a mistake (`runtime validate` prints them); unset when there is none. */
  warnings?: import("../errors.js").ConfigProblem[];
}
