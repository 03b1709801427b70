/**
 * The contract between the engine and the agent kinds (docs/design/engine.md).
 * A kind is a folder under src/kinds/ with its machine and its runner; the
 * engine hands the runner an `AgentContext` whose services (call a model, call
 * tools, report states, call another agent) are the engine's, written once.
 * Kinds import this file, never the engine.
 */
import type { AnyStateMachine } from "xstate";
import type { MachineObserver } from "./machine/interpret.js";
import type { AgentConfig, AgentKind, JsonSchema, ResolvedTeam } from "../config/types.js";
import type { RunEventBody, EventScope, Usage, Verification } from "../events/types.js";
import type { ChatMessage, ChatResponse, ResponseFormat, ToolSpec } from "../models/types.js";
import type { Attachment } from "../models/attachment.js";
import type { Tool, ToolBox } from "../tools/types.js";
import type { RunStores } from "../store/store.js";
import type { Exchange } from "../store/conversations.js";

import type { RunError } from "../errors.js";

export type { RunStores };

export type { ToolBox } from "../tools/types.js";

/** How one agent step ended. */
export interface AgentResult {
  result_type: "answer" | "error";
  answer?: string;
  error?: RunError;
  /** How the answer was verified, when the kind verifies it (docs/design/verification.md). */
  verification?: Verification;
  usage: Usage;
}

/**
 * How a step ended, as its kind tells it: the engine makes it the step's
 * `AgentResult`, adding the usage it counted (docs/design/engine.md#steps).
 */
export type Outcome = Pick<AgentResult, "result_type" | "answer" | "error" | "verification">;

/** What a kind adds to the `llm.response` event of a reply it has understood. */
export interface ReplyReading {
  action_type?: string;
  observe?: string;
  thought?: string;
  /** Why the reply was refused: what goes back to the model to repair. */
  error?: string;
}

/** One model call, as a kind asks for it. */
export interface ModelCall<R extends ReplyReading = ReplyReading> {
  messages: ChatMessage[];
  tools?: ToolSpec[];
  /** The recursion (round) the call belongs to; its events carry it. */
  trace_id?: string;
  /** The model, by name. @default the agent's own model */
  model?: string;
  /** Structured output to ask for, where the model supports it (docs/model-servers.md#structured-output). */
  response_format?: ResponseFormat;
  /**
   * Reads the reply for the `llm.response` event (action type, thought, ...).
   * The reading is returned beside the reply, so the kind parses it once.
   */
  read?: (reply: ChatResponse) => R;
}

/** A model's reply with the kind's reading of it. */
export interface ModelReply<R extends ReplyReading = ReplyReading> {
  reply: ChatResponse;
  reading: R | undefined;
}

/** Options of the state reporter of one machine. */
export interface StateReportOptions {
  /** The recursion a state belongs to, read from the machine's context at each microstep. */
  traceId?: (context: unknown) => string | undefined;
}

/** Services the engine offers one agent step. */
export interface AgentContext<C extends AgentConfig = AgentConfig> {
  readonly team: ResolvedTeam;
  readonly agent: C;
  /** agent_id, step_id and parent_step_id of this step. */
  readonly scope: EventScope;
  readonly task_id: string;
  /** Conversation key: a follow-up in the same session continues its state (todo list). */
  readonly session_id: string;
  /** The caller named the session: the conversation carries across runs (docs/sessions.md). */
  readonly inSession: boolean;
  /** The conversation the run's caller gave: read instead of the session's stored turns (src/kinds/conversation.ts). */
  readonly history?: readonly Exchange[];
  /** The files the run was given (docs/attachments.md): the entry step's first user message carries them (`userMessage`). */
  readonly attachments?: readonly Attachment[];
  readonly signal: AbortSignal;
  /** Trace directory of the run (embedded stores live there). */
  readonly trace_dir: string;
  /** Plans and todo sessions, in the run's store. */
  readonly stores: RunStores;
  /** Emit an event from this step; `trace_id` marks the recursion it belongs to. */
  emit(body: RunEventBody, extra?: { trace_id?: string }): void;
  /**
   * The one way to call a model: `llm.request`, `llm.delta`, `llm.response`
   * (with the kind's reading) and `llm.error` events, the reply committed to
   * the run's journal before it is returned. Throws a one-line RuntimeError
   * (ABORTED when the step's signal fired).
   */
  callModel<R extends ReplyReading>(call: ModelCall<R>): Promise<ModelReply<R>>;
  /** The name the agent's model reports in events. */
  modelName(name?: string): string;
  /**
   * The agent's allow-listed tools, plus `extra` tools the agent kind binds
   * itself (todo tools, say). Agents named in the allow-list become tools that
   * call them (`{query}` in, answer out) as child steps.
   */
  tools(extra?: Tool[]): ToolBox;
  /**
   * Run another agent of the team as a child step of this one. `expects`:
   * the JSON Schema its answer must match; a kind that can, asks its model
   * for it as structured output (docs/model-servers.md#structured-output).
   */
  callAgent(name: string, input: string, options?: { expects?: JsonSchema }): Promise<AgentResult>;
  /** The JSON Schema the caller expects this step's answer to match, if it said so. */
  expects?: JsonSchema;
  /**
   * The one state reporter: the observer the kind's machine runs with
   * (`runMachine`, src/kinds/run-machine.ts), so the machine's states become
   * `state.changed` events named after the machine's id, each before the
   * work it starts.
   */
  observeStates(machine: AnyStateMachine, options?: StateReportOptions): MachineObserver;
  /**
   * Read something from outside the run (a stored plan, a session's list) so
   * that a resumed run reads it as it was then: the value is journalled, and
   * a resume gets it back instead of calling `read` (docs/durable-runs.md).
   * Values must be JSON.
   */
  remember<T>(name: string, read: () => T | Promise<T>): Promise<T>;
  /**
   * Whether this step is going over what it did before a resume (its
   * recorded calls are reused): state outside the run must not be written
   * meanwhile, it already holds what those calls did.
   */
  replaying(): boolean;
  /**
   * The agent's output guardrails on an answer before the kind takes it
   * (docs/guardrails.md): the answer to give (masked by a redact), or the
   * reason to give back to the model (a retry). Throws when one blocks. A
   * kind that never calls it has its answer checked when its step ends, a
   * retry there blocking.
   */
  checkAnswer(answer: string): Promise<{ ok: true; answer: string } | { ok: false; reason: string }>;
  /**
   * The conversation's earlier turns through the agent's input guardrails
   * (docs/guardrails.md#every-turn-the-model-reads), as the input went
   * through them before the kind started: each request and answer checked,
   * masked where a guardrail redacts; throws RuntimeError BLOCKED when one blocks.
   */
  checkTurns(turns: readonly Exchange[]): Promise<Exchange[]>;
  newId(): string;
  now(): Date;
}

/** An agent kind's entry point: runs one step to its end and tells how it ended; never throws for a run failure. */
export type AgentRunner<C extends AgentConfig = AgentConfig> = (ctx: AgentContext<C>, input: string) => Promise<Outcome>;

/** A kind's code: the machine that runs an agent of this kind (drawn by `runtime graph`) and its runner. */
export interface KindModule<K extends AgentKind = AgentKind> {
  machine: AnyStateMachine;
  run: AgentRunner<Extract<AgentConfig, { kind: K }>>;
  /**
   * The answer a reply being streamed holds so far, when the kind's answer is
   * the text of one model reply (react's ANSWER); undefined while the reply
   * is not (yet) an answer. Read by src/kinds/answer-text.ts.
   */
  partialAnswer?: (reply: string) => string | undefined;
}

/** One agent kind: what the registry (src/kinds/registry.ts) knows of it. */
export interface KindDefinition<K extends AgentKind = AgentKind> {
  kind: K;
  /** Its title in `runtime graph`, naming the design it mirrors. */
  title: string;
  /**
   * Its first request carries the run's attachments (`userMessage`,
   * src/kinds/conversation.ts); a run of a kind without it is refused them (docs/attachments.md).
   */
  attachments?: true;
  /**
   * The kind's machine and runner, imported the first time a run or
   * `runtime graph` needs them: importing the library loads no kind (nor xstate).
   */
  load(): Promise<KindModule<K>>;
  /** Runs one step of the kind: `load()`, then its runner. */
  run: AgentRunner<Extract<AgentConfig, { kind: K }>>;
}
