/**
 * The one event vocabulary of the runtime (PRODUCT.md section 4). NDJSON, SSE,
 * the terminal view and the trace store all consume `RunEvent`; there is no
 * second, parallel set of events.
 */

import type { ErrorCode } from "../errors.js";

/** What a guardrail checks (docs/guardrails.md). */
export type GuardrailOn = "input" | "output" | "tool_input" | "tool_output";

/** A file a run was given, as the journal, events and traces name it: never its bytes (docs/attachments.md). */
export interface AttachmentRef {
  name: string;
  media_type: string;
  size: number;
  /** SHA-256 of the bytes, hex: the key of the bytes in the run's store. */
  sha256: string;
}

/** Token accounting, summed over every model call of a run. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Of `prompt_tokens`, those read from the server's prompt cache, where it reports them; absent otherwise. */
  cached_tokens?: number;
  /** Of `prompt_tokens`, those written to the server's prompt cache (Anthropic's `cache_creation_input_tokens`), where it reports them; absent otherwise. */
  cache_write_tokens?: number;
  /** In a sum of usages: the share of `prompt_tokens` read from the cache, 0 to 1 (docs/model-servers.md#prompt-caching); absent when nothing was cached. */
  cache_hit_rate?: number;
  /** Of `completion_tokens`, those spent on reasoning, where the server reports them; absent otherwise. */
  reasoning_tokens?: number;
  /**
   * How many of the model calls counted here reported no usage, or only part
   * of it (some local servers): the token counts are then a lower bound.
   * Absent when every call reported its usage.
   */
  unknown?: number;
}

export type TodoStatus = "pending" | "in_progress" | "completed" | "failed" | "skipped" | "blocked";

export interface TodoItem {
  /** 1-based position in the list. */
  index: number;
  content: string;
  status: TodoStatus;
  tool_calls_count: number;
  notes?: string;
}

export type PlanTaskStatus = "ready" | "inprogress" | "completed" | "error" | "skipped";

/** Fields every event carries. `seq` strictly increases within a task. */
export interface EventBase {
  seq: number;
  ts: string;
  task_id: string;
  agent_id: string;
  /** One agent invocation (the entry agent, or an agent called as a tool). */
  step_id?: string;
  /** The step that called this one, for nested agents. */
  parent_step_id?: string;
  /** One recursion / model round. */
  trace_id?: string;
}

export type RunEventBody =
  | {
      type: "run.started";
      input: string;
      /** The conversation the run belongs to, when its caller named one (docs/sessions.md). */
      session_id?: string;
      /** The name of the server's caller who started the run, its owner (docs/security.md#who-can-reach-what); never the token. */
      caller?: string;
      /** The files the run was given, by name, media type, size and SHA-256: never their bytes (docs/attachments.md). */
      attachments?: AttachmentRef[];
    }
  | { type: "agent.started"; kind: string; input: string }
  | {
      type: "agent.finished";
      result_type: "answer" | "error";
      answer?: string;
      error?: string;
      /** The error's code (src/errors.ts); absent in traces of versions before it was added. */
      error_code?: ErrorCode;
      /** How the step's answer was verified (plan_and_solve; docs/design/verification.md). */
      verification?: Verification;
      usage: Usage;
    }
  | {
      type: "state.changed";
      machine: string;
      from: string;
      to: string;
      /** Transient states passed through on the way from `from` to `to`, in order. */
      via?: string[];
    }
  | { type: "recursion.started"; iteration: number }
  /** A guardrail found nothing against the text it checked (docs/guardrails.md). */
  | { type: "guardrail.passed"; name: string; on: GuardrailOn; tool?: string }
  /** A guardrail tripped: the run is blocked, the text masked, or the reason given back to the model. */
  | { type: "guardrail.tripped"; name: string; on: GuardrailOn; tool?: string; action: "block" | "redact" | "retry"; reason: string }
  | { type: "llm.request"; model: string; messages: number }
  | {
      type: "llm.response";
      model: string;
      /** The team's name of the model that answered, when the call had fallbacks to choose from. */
      model_name?: string;
      usage: Usage;
      duration_ms: number;
      /** The model's reasoning (`reasoning_content`, or a `<think>` block), shown apart and never sent back. */
      reasoning?: string;
      /** Why the reply ended: `stop`, `tool_calls`, `length` (cut off at the token limit), ... */
      finish_reason?: string;
      action_type?: string;
      observe?: string;
      thought?: string;
      content?: string;
      tool_calls?: { id: string; name: string; arguments: string }[];
      /** Why a reply was refused (action_type INVALID): what goes back to the model to repair. */
      error?: string;
    }
  | { type: "llm.delta"; text: string }
  | { type: "llm.error"; model: string; model_name?: string; error: string }
  /**
   * Something the runtime noticed about a model's server and adapted to, said
   * once: `layout` (its chat template refused the request's roles; requests
   * are laid out for it from now on), `structured_output` (it refused
   * `response_format`; instructions alone from now on) or `fallback` (the
   * model failed; the next one in its `fallback` list takes over).
   */
  | { type: "llm.notice"; model: string; notice: "layout" | "structured_output" | "fallback"; message: string }
  /**
   * A request would have passed its model's `compact_at` of `context_window`
   * (docs/context.md): large tool results were trimmed and `summarised` older
   * messages replaced by one summary, taking the request from `tokens_before`
   * to `tokens_after` (as counted, corrected by the server's usage).
   */
  | { type: "context.compacted"; model: string; tokens_before: number; tokens_after: number; summarised: number; trimmed: number }
  | { type: "tool.started"; tool: string; call_id: string; arguments: unknown }
  /**
   * What a tool at work tells before it ends (an MCP server's progress or log
   * notification, a remote A2A agent's status): `progress` of `total` when it
   * counts, `message` when it says something (docs/events.md).
   */
  | { type: "tool.progress"; tool: string; call_id: string; message?: string; progress?: number; total?: number }
  | {
      type: "tool.finished";
      tool: string;
      call_id: string;
      arguments: unknown;
      ok: boolean;
      result?: unknown;
      error?: string;
      duration_ms: number;
    }
  | { type: "plan.created"; steps: string[] }
  /**
   * A plan written again. `done`: the steps marked done (1-based, in any
   * order), a step kept done by its text once marked; `finished`: how many.
   */
  | { type: "plan.updated"; steps: string[]; finished?: number; done?: number[] }
  | { type: "todo.updated"; session_id: string; version: number; todos: TodoItem[] }
  | { type: "todo.item_progress"; session_id: string; version: number; item: TodoItem }
  | { type: "todo.completed"; session_id: string; version: number; todos: TodoItem[] }
  | {
      type: "task.status";
      plan_id: string;
      /** The plan's task id (the run's own id is `task_id`, as on every event). */
      plan_task_id: string;
      status: PlanTaskStatus;
      plan_status: "running" | "completed" | "error";
    }
  /**
   * A final answer checked before it is accepted (plan_and_solve VERIFYING,
   * docs/plan-and-solve.md#verifying): `checks` (numbers against the recorded
   * tool results) or `model` (a verification call). `unclear`: the verifier's
   * reply could not be read, and the answer is taken. `round` counts the
   * verifications of this step. `usage`: what the verification call cost
   * (`model` only; the run's usage counts it too).
   */
  | {
      type: "answer.verified";
      method: "checks" | "model";
      verdict: "pass" | "fail" | "unclear";
      problems: string[];
      answer: string;
      round: number;
      usage?: Usage;
    }
  | {
      /** A stopped run goes on from its journal (docs/durable-runs.md); `seq` continues. */
      type: "run.resumed";
      input: string;
      /** Events of the run stored before this one. */
      after_seq: number;
    }
  | {
      /** A tool call waits for a person's decision; `in_doubt`: a write that started before a crash and may have run. */
      type: "approval.requested";
      approval_id: string;
      tool: string;
      call_id: string;
      arguments: unknown;
      in_doubt?: boolean;
    }
  | { type: "approval.decided"; approval_id: string; tool: string; call_id: string; decision: ApprovalDecision; reason?: string }
  | {
      type: "run.finished";
      /** `paused`: the run waits for the approvals listed; `runtime resume` continues it. `blocked`: a guardrail ended it. */
      result_type: "answer" | "error" | "paused" | "blocked";
      answer?: string;
      error?: string;
      /** The error's code (src/errors.ts, docs/events.md); absent in traces of versions before it was added. */
      error_code?: ErrorCode;
      approvals?: PendingApproval[];
      /** The guardrail that blocked the run (docs/guardrails.md). */
      guardrail?: { name: string; on: GuardrailOn; reason: string };
      usage: Usage;
      /** Spent against the team's budget, when it has one (docs/budgets.md). */
      budget?: BudgetStatement;
      /** How the answer was verified, when its agent verifies (plan_and_solve; docs/design/verification.md). */
      verification?: Verification;
    };

/** An answer's verification: `failed` keeps the answer and says what no check could trace; `strict` runs exit 1 on it. */
export interface Verification {
  status: "passed" | "failed";
  findings: string[];
  strict?: boolean;
}

/** Each limit of a budget with what was spent against it. */
export type BudgetStatement = Partial<
  Record<"max_tokens" | "max_model_calls" | "max_tool_calls" | "max_seconds" | "max_cost_usd", { limit: number; spent: number }>
>;

export type ApprovalDecision = "approve" | "deny";

/** A call a paused run waits on. */
export interface PendingApproval {
  approval_id: string;
  tool: string;
  call_id: string;
  in_doubt?: boolean;
}

export type RunEventType = RunEventBody["type"];

export type RunEvent = RunEventBody & EventBase;

/** Narrow a RunEvent to one type. */
export type EventOf<T extends RunEventType> = Extract<RunEventBody, { type: T }> & EventBase;

/** Where an event comes from inside a run; the bus adds seq, ts and task_id. */
export interface EventScope {
  agent_id: string;
  step_id?: string;
  parent_step_id?: string;
  trace_id?: string;
}

/** Emit an event from a scope. */
export type Emit = (body: RunEventBody, scope: EventScope) => void;

export const ZERO_USAGE: Usage = Object.freeze({ prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 });
