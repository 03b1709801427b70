import type { ToolEffect } from "../config/types.js";
import type { EventScope, RunEventBody } from "../events/types.js";
import type { ToolCallRequest, ToolSpec } from "../models/types.js";

/** What a tool sees while it runs. */
export interface ToolContext {
  signal: AbortSignal;
  /** The scope of the calling agent step; tools emitting events use it. */
  scope: EventScope;
  emit(body: RunEventBody, scope?: EventScope): void;
  call_id: string;
}

export type { ToolEffect };

/**
 * A tool ready to run. `execute` receives arguments already validated
 * against `parameters`; it returns any JSON-serialisable value or throws
 * (a throw becomes a result with an error for the model to repair).
 */
export interface Tool extends ToolSpec {
  effect: ToolEffect;
  /**
   * `rerun`: the tool changes state the run holds in memory (the todo list),
   * so a resumed run runs it again on its recorded arguments instead of
   * reusing its recorded result. @default reuse
   */
  replay?: "reuse" | "rerun";
  /** `required`: every call waits for a person's decision before it runs. */
  approval?: "required";
  timeout_ms: number;
  max_output_bytes: number;
  execute(args: Record<string, unknown>, ctx: ToolContext): Promise<unknown>;
}

/** The outcome of one tool call, in the order the model asked. */
export interface ToolOutcome {
  call_id: string;
  tool: string;
  /** Parsed arguments, or the raw text when it did not parse. */
  arguments: unknown;
  ok: boolean;
  result?: unknown;
  error?: string;
  duration_ms: number;
}

/**
 * The tools one agent step may use: its allow-list, resolved. `run` validates
 * arguments against each tool's JSON Schema, refuses tools outside the
 * allow-list back to the model, runs the calls of one reply concurrently with
 * timeouts and output caps, emits `tool.started`/`tool.finished`, commits each
 * result to the run's journal, and returns the outcomes in call order. It
 * never throws for a tool's failure.
 */
export interface ToolBox {
  readonly specs: ToolSpec[];
  has(name: string): boolean;
  run(calls: ToolCallRequest[], options?: { trace_id?: string }): Promise<ToolOutcome[]>;
  /**
   * Answer a call with an error without running it (a kind's own rule refused
   * it): the same events and journal entry as a call that failed.
   */
  refuse(call: ToolCallRequest, error: string, options?: { trace_id?: string }): ToolOutcome;
}
