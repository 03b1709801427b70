/**
 * The one way to call a model (docs/design/engine.md#model-calls): every kind
 * reaches it through `AgentContext.callModel`. It emits `llm.request`,
 * `llm.delta` (streamed text), then `llm.response` with the kind's reading of
 * the reply, or `llm.error`; it commits the reply to the run's journal before
 * the kind sees it; and it does, for every kind, what real servers need
 * (docs/model-servers.md): a model's `fallback` list tried when it is unavailable,
 * reasoning reported apart, a reply cut off at the token limit stripped of
 * its half-written tool calls, and the client's notices emitted. A model
 * with a `context_window` gets requests that fit it (docs/context.md).
 */
import { RuntimeError, describeError } from "../errors.js";
import type { RunEventBody, Usage } from "../events/types.js";
import type { ChatClient, ChatMessage, ChatResponse } from "../models/types.js";
import { defaultTemplate } from "../prompts/render.js";
import type { ModelCall, ModelReply, ReplyReading } from "../kinds/types.js";
import { isCutOff } from "../kinds/cut-off.js";
import type { ModelConfig } from "../config/types.js";
import type { Account } from "./budget.js";
import type { ContextFit, SummaryInput } from "./context-fit.js";
import { fingerprint, type Journal, type StepKeys } from "./journal.js";

/** What one step lends its model calls. */
export interface ModelCallPorts {
  /** The step's own model, by name. */
  model: string;
  /** The client of a model, by name. */
  client(name: string): ChatClient;
  /** A model's fallbacks, by name, in order. */
  fallbacks(name: string): readonly string[];
  /** Models of this run found unavailable: later calls go straight to their fallbacks. */
  unavailable: Set<string>;
  /** The budgets this step spends from (src/engine/budget.ts); checked before the call starts. */
  accounts: readonly Account[];
  /** A model's configuration, by name (for its price). */
  config(name: string): ModelConfig | undefined;
  emit(body: RunEventBody, extra?: { trace_id?: string }): void;
  signal: AbortSignal;
  agent_id: string;
  journal: Journal;
  keys: StepKeys;
  /** Throws when the run may start no new call (it is pausing for an approval). */
  halt(): void;
  /** Counts a reply's usage to the step (a summary's too). */
  spent(usage: Usage): void;
  /** The step's requests kept within their model's context window (src/engine/context-fit.ts). */
  context: ContextFit;
  /** The model the agent names to write its summaries (`compaction: {model}`), before the model's own choice. */
  compaction?: string;
}

export async function callModel<R extends ReplyReading>(ports: ModelCallPorts, call: ModelCall<R>): Promise<ModelReply<R>> {
  const name = call.model ?? ports.model;
  const config = ports.config(name);
  if (config === undefined || config.provider === "scripted" || config.context_window === undefined) return (await send(ports, call)).answered;
  // The request made to fit the model's window (docs/context.md); a summary it needs is a model call of its own.
  const window = { model: name, tokens: config.context_window, compact_at: config.compact_at };
  let quiet = ports.journal.replay?.mode === "resume" && ports.journal.replay.replaying(ports.keys.key);
  const fitted = await ports.context.fit(call.messages, call.tools, window, async (input) => {
    const summary = await send(ports, {
      messages: summaryRequest(input),
      model: ports.compaction ?? config.compaction?.model ?? name,
      ...(call.trace_id !== undefined ? { trace_id: call.trace_id } : {}),
    });
    // Resuming, a reused summary's compaction is in the store already.
    quiet = summary.quiet;
    return summary.answered.reply.content ?? "";
  });
  if (fitted.compacted && !quiet)
    ports.emit({ type: "context.compacted", model: name, ...fitted.compacted }, call.trace_id !== undefined ? { trace_id: call.trace_id } : undefined);
  const { answered } = await send(ports, { ...call, messages: fitted.messages });
  ports.context.observe(name, fitted.counted, answered.reply.usage);
  return answered;
}

/** A model call as it goes out, fitted or not: `quiet` when a resumed run reused its reply (its events are stored). */
async function send<R extends ReplyReading>(ports: ModelCallPorts, call: ModelCall<R>): Promise<{ answered: ModelReply<R>; quiet: boolean }> {
  const extra = call.trace_id !== undefined ? { trace_id: call.trace_id } : undefined;
  const key = ports.keys.nextModel();
  const request = ports.journal.active ? fingerprint(call.messages, call.tools, call.response_format) : undefined;
  const replay = ports.journal.replay;
  // A resumed or replayed run reuses the stored reply to the same request (src/engine/replay.ts).
  const recorded = request && replay?.modelReply(key, request.hash);
  if (!recorded) {
    ports.halt();
    for (const account of ports.accounts) account.checkModelCall();
  }
  for (const account of ports.accounts) account.modelCall();
  const candidates = chain(ports, call.model ?? ports.model);
  let client = ports.client(candidates[0]);
  // Resuming, a reused reply's events are in the store already.
  const emit = recorded && replay?.mode === "resume" ? () => {} : ports.emit;
  emit({ type: "llm.request", model: client.model, messages: call.messages.length }, extra);
  const started = Date.now();
  let reply: ChatResponse | undefined = recorded || undefined;
  if (reply) client.replayed?.({ messages: call.messages, agent_id: ports.agent_id });
  // With fallbacks, the events name the team's model too: two models may share a wire id.
  const named = (name: string) => (candidates.length > 1 ? { model_name: name } : {});
  let answered = candidates[0];
  // Write-ahead: the replies and tool results this request is built from are committed before it leaves.
  const committed = reply ? undefined : ports.journal.commit();
  if (committed) await committed;
  for (const [i, name] of reply ? [] : candidates.entries()) {
    client = ports.client(name);
    answered = name;
    try {
      reply = await client.chat({
        messages: call.messages,
        ...(call.tools?.length ? { tools: call.tools } : {}),
        ...(call.response_format ? { response_format: call.response_format } : {}),
        signal: ports.signal,
        agent_id: ports.agent_id,
        onDelta: (text) => ports.emit({ type: "llm.delta", text }, extra),
        onNotice: ({ notice, message }) => ports.emit({ type: "llm.notice", model: client.model, notice, message }, extra),
      });
      break;
    } catch (err) {
      ports.emit({ type: "llm.error", model: client.model, ...named(name), error: describeError(err) }, extra);
      if (ports.signal.aborted) throw new RuntimeError("ABORTED", "interrupted");
      const next = candidates[i + 1];
      if (next === undefined || !(err instanceof RuntimeError) || err.code !== "MODEL_UNAVAILABLE") throw err;
      ports.unavailable.add(name);
      const message = `${describeError(err)}; trying fallback model '${next}'`;
      ports.emit({ type: "llm.notice", model: client.model, notice: "fallback", message }, extra);
    }
  }
  if (!reply) throw new RuntimeError("MODEL_UNAVAILABLE", "no model answered");
  for (const account of ports.accounts) account.spend(reply.usage, ports.config(answered));
  ports.spent(reply.usage);
  // A reply cut off at the token limit may end inside a tool call's arguments: none of its calls is run.
  if (isCutOff(reply) && reply.tool_calls.length > 0) reply = Object.assign({}, reply, { tool_calls: [] });
  const duration_ms = Date.now() - started;
  if (!recorded) ports.journal.modelReply(key, reply, request);
  const reading = call.read?.(reply);
  emit(
    {
      type: "llm.response",
      model: client.model,
      ...named(answered),
      usage: reply.usage,
      duration_ms,
      ...(reply.finish_reason !== "stop" && reply.finish_reason !== "tool_calls" ? { finish_reason: reply.finish_reason } : {}),
      ...(reading?.action_type !== undefined ? { action_type: reading.action_type } : {}),
      ...(reading?.observe !== undefined ? { observe: reading.observe } : {}),
      ...(reading?.thought !== undefined ? { thought: reading.thought } : {}),
      ...(reply.reasoning ? { reasoning: reply.reasoning } : {}),
      ...(reply.content ? { content: reply.content } : {}),
      ...(reply.tool_calls.length ? { tool_calls: reply.tool_calls } : {}),
      ...(reading?.error !== undefined ? { error: reading.error } : {}),
    },
    extra,
  );
  return { answered: { reply, reading }, quiet: Boolean(recorded) && replay?.mode === "resume" };
}

let summaryPrompt: ((data: Record<string, unknown>) => string) | undefined;

/** The request for a summary of the older part of a conversation (prompts/context_summary.hbs). */
function summaryRequest(input: SummaryInput): ChatMessage[] {
  summaryPrompt ??= defaultTemplate("context_summary");
  const lines = input.messages.map((m) => {
    const calls = m.role === "assistant" && m.tool_calls?.length ? ` [calls ${m.tool_calls.map((c) => `${c.name}(${c.arguments})`).join(", ")}]` : "";
    return { role: m.role, text: `${m.content ?? ""}${calls}` };
  });
  return [{ role: "user", content: summaryPrompt({ summary: input.summary, messages: lines, max_words: input.max_words }) }];
}

/**
 * The models to try, in order: the named one and its fallbacks (theirs too,
 * each once), those found unavailable earlier in the run moved to the end.
 */
function chain(ports: ModelCallPorts, first: string): [string, ...string[]] {
  const order: string[] = [];
  const visit = (name: string) => {
    if (order.includes(name)) return;
    order.push(name);
    for (const next of ports.fallbacks(name)) visit(next);
  };
  visit(first);
  if (order.length === 1) return [first];
  const up = order.filter((n) => !ports.unavailable.has(n));
  const down = order.filter((n) => ports.unavailable.has(n));
  return [...up, ...down] as [string, ...string[]];
}
