import type { AgentConfig, ResolvedTeam } from "../config/types.js";
import type { EventScope, RunEventBody, Usage } from "../events/types.js";
import type { ChatClient, ToolCallRequest, ToolSpec } from "../models/types.js";
import type { Tool, ToolOutcome } from "../tools/types.js";

/** How one agent step ended. */
export interface AgentResult {
  result_type: "answer" | "error";
  answer?: string;
  error?: string;
  usage: Usage;
}

/**
 * The tools one agent step may use: its allow-list, resolved. `run` validates
 * arguments against each tool's JSON Schema, refuses tools outside the
 * allow-list back to the model, runs the calls of one reply concurrently with
 * timeouts and output caps, emits `tool.started`/`tool.finished`, and returns
 * the outcomes in call order. It never throws for a tool's failure.
 */
export interface ToolBox {
  readonly specs: ToolSpec[];
  has(name: string): boolean;
  run(calls: ToolCallRequest[], options?: { trace_id?: string }): Promise<ToolOutcome[]>;
}

/** Services a run offers its agents, created once per run by `runTeam`. */
export interface AgentContext {
  readonly team: ResolvedTeam;
  readonly agent: AgentConfig;
  /** agent_id, step_id and parent_step_id of this step. */
  readonly scope: EventScope;
  readonly task_id: string;
  /** Conversation key: a follow-up in the same session continues its state (todo list). */
  readonly session_id: string;
  readonly signal: AbortSignal;
  /** Trace directory of the run (embedded stores live there). */
  readonly trace_dir: string;
  /** Emit an event from this step; `trace_id` marks the recursion it belongs to. */
  emit(body: RunEventBody, extra?: { trace_id?: string }): void;
  /** The chat client of a model, by name; the agent's own model by default. */
  model(name?: string): ChatClient;
  /**
   * The agent's allow-listed tools, plus `extra` tools the agent kind binds
   * itself (todo tools, say). Agents named in the allow-list become tools that
   * call them (`{query}` in, answer out) as child steps.
   */
  tools(extra?: Tool[]): ToolBox;
  /** Run another agent of the team as a child step of this one. */
  callAgent(name: string, input: string): Promise<AgentResult>;
  newId(): string;
  now(): Date;
}

/** An agent kind's entry point: runs one step to its end, never throws for a run failure. */
export type AgentRunner = (ctx: AgentContext, input: string) => Promise<AgentResult>;
