import type { EventScope, RunEventBody } from "../events/types.js";
import type { ToolSpec } from "../models/types.js";

/** What a tool sees while it runs. */
export interface ToolContext {
  signal: AbortSignal;
  /** The scope of the calling agent step; tools emitting events use it. */
  scope: EventScope;
  emit(body: RunEventBody, scope?: EventScope): void;
  call_id: string;
}

/**
 * A tool ready to run. `execute` receives arguments already validated
 * against `parameters`; it returns any JSON-serialisable value or throws
 * (a throw becomes a result with an error for the model to repair).
 */
export interface Tool extends ToolSpec {
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
