/**
 * The one way to call a model (docs/design/engine.md#model-calls): every kind
 * reaches it through `AgentContext.callModel`. It emits `llm.request`,
 * `llm.delta` (streamed text), then `llm.response` with the kind's reading of
 * the reply, or `llm.error`; it commits the reply to the run's journal before
 * the kind sees it; and it does, for every kind, what real servers need
 * (docs/servers.md): a model's `fallback` list tried when it is unavailable,
 * reasoning reported apart, a reply cut off at the token limit stripped of
 * its half-written tool calls, and the client's notices emitted.
 */
import { RuntimeError, describeError } from "../errors.js";
import type { RunEventBody } from "../events/types.js";
import type { ChatClient, ChatResponse } from "../models/types.js";
import type { ModelCall, ModelReply, ReplyReading } from "../kinds/types.js";
import { isCutOff } from "../kinds/cut-off.js";
import type { ModelConfig } from "../config/types.js";
import type { Account } from "./budget.js";
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
}

export async function callModel<R extends ReplyReading>(ports: ModelCallPorts, call: ModelCall<R>): Promise<ModelReply<R>> {
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
  return { reply, reading };
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
