/**
 * Every default of a team file, and where it is decided. Nothing else, in
 * config/ or downstream, writes a default of the team file: a ResolvedTeam
 * has every field filled.
 *
 * Plain values are `default`s in schemas/team.schema.json, filled in by ajv
 * while validating (schema.ts, `useDefaults`); a test keeps this list equal
 * to the schema's:
 * - team: description "", tools {}, workflows {}, allow_outside_paths false
 * - knowledge: top_k 3
 * - openai model: api "chat_completions", timeout_ms 60000, max_retries 2, stream true, max_retry_wait_ms 30000, headers {}, extra_body {}, structured_output false, attachments [], fallback [], compact_at 0.8
 * - scripted model: model "scripted", stream false
 * - guardrail: action "block"
 * - tool (every type): description "", timeout_ms 30000, max_output_bytes 65536
 * - command, http, mcp and a2a tool: effect "write"
 * - command and http tool: parameters {"type":"object","properties":{}}
 * - command tool: env {}
 * - http tool: method "POST", headers {}, allow_private false
 * - a2a tool: timeout_ms 120000, headers {}
 * - mcp tool (either server): connect_timeout_ms 30000; stdio server: env {}; http server: headers {}
 * - agent (every kind): description "", max_iteration 30, tools [], approval {}
 * - plan_and_solve agent: todo_complete_after 3, todo_block_after 2, plan "required", verify "checks", max_verify_rounds 1
 * - plan_and_solve_flow agent: enable_replanner false, max_replan_rounds 30
 * - plan_solver agent: concurrency 4
 * - workflow and workflow step: description ""; workflow task: optional false
 * - workflow: order "steps"
 *
 * Defaults that depend on other keys are decided by the functions below and
 * applied by resolve.ts:
 * - entry: the first agent declared (`entryAgent`)
 * - agent model: the model named `default`, else the only model (`agentModel`;
 *   references.ts asks it too, to report an agent left without one)
 * - command tool cwd: the team file's directory (`commandCwd`)
 * - a2a tool parameters: its one `message` (resolve.ts)
 * - built-in and module tool parameters: an empty object schema
 *   (`builtinParameters`; at run time each keeps its own)
 * - plan_and_solve_flow replanner: the flow's planner (`flowReplanner`)
 * - plan_and_solve verifier: the agent's own model (resolve.ts)
 * - guardrail name: its check's kind and its `on` (`pii:output`); max_retries
 *   1 with action retry; timeout_ms 10000 with a command (resolve.ts: the
 *   schema cannot fill them, the reference checks refuse them elsewhere)
 * - openai model idle_timeout_ms: timeout_ms or 30000, the smaller
 *   (`streamIdleTimeout`)
 * - openai model base_url and api_key: unset or empty is left out, so the
 *   openai client uses its own (OPENAI_BASE_URL, OPENAI_API_KEY) (resolve.ts)
 * - openai model max_tokens_param: unset is left out; the field then follows
 *   the model id (`maxTokensParam` in src/models/dialect.ts, which knows the
 *   model families; config/ knows none)
 */
import { resolve } from "node:path";
import type { JsonSchema } from "./types.js";

/** The agent `runtime exec` runs without --agent: `entry`, else the first agent declared. */
export function entryAgent(entry: string | undefined, agentNames: readonly string[]): string | undefined {
  return entry ?? agentNames[0];
}

/**
 * The model an agent uses: its `model`, else the model named `default`, else
 * the only model. Undefined when none is named and that leaves a choice.
 */
export function agentModel(model: string | undefined, modelNames: ReadonlySet<string>): string | undefined {
  if (model !== undefined) return model;
  if (modelNames.has("default")) return "default";
  return modelNames.size === 1 ? modelNames.values().next().value : undefined;
}

/** A command tool's working directory: `cwd` against the team file's directory `dir`, else `dir`. */
export function commandCwd(cwd: string | undefined, dir: string): string {
  return cwd === undefined ? dir : resolve(dir, cwd);
}

/**
 * The `parameters` of a built-in tool, which the team file cannot set: the
 * same empty object schema as the schema's default for the other tools (a
 * test keeps them equal). At run time a built-in keeps its own schema.
 */
export function builtinParameters(): JsonSchema {
  // A fresh object per tool: the resolved team is the caller's to change.
  return { type: "object", properties: {} };
}

/** The agent a plan_and_solve_flow asks to replan: `replanner`, else its planner (which knows the Plan format). */
export function flowReplanner(flow: { planner: string; replanner?: string | undefined }): string {
  return flow.replanner ?? flow.planner;
}

/** Silence allowed between two streamed chunks when a model sets none. */
export const STREAM_IDLE_MS = 30_000;

/** A model's `idle_timeout_ms`: its own, else timeout_ms or STREAM_IDLE_MS, the smaller. */
export function streamIdleTimeout(idle: number | undefined, timeout_ms: number): number {
  return idle ?? Math.min(timeout_ms, STREAM_IDLE_MS);
}

/**
 * Limits of a tool given in code (`defineTool` without `timeout_ms` or
 * `max_output_bytes`): the schema's defaults for a tool of the team file (a
 * test keeps them equal).
 */
export function codeToolLimits(): { timeout_ms: number; max_output_bytes: number } {
  return { timeout_ms: 30_000, max_output_bytes: 65_536 };
}
