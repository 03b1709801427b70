/**
 * The one way to call a model (docs/design/engine.md#model-calls): every kind
 * reaches it through `AgentContext.callModel`. It emits `llm.request`,
 * `llm.delta` (streamed text), then `llm.response` with the kind's reading of
 * the reply, or `llm.error`; and it commits the reply to the run's journal
 * before the kind sees it.
 */
import { RuntimeError, describeError } from "../errors.js";
import type { RunEventBody } from "../events/types.js";
import type { ChatClient } from "../models/types.js";
import type { ModelCall, ModelReply, ReplyReading } from "../kinds/types.js";
import type { Journal, StepKeys } from "./journal.js";

/** What one step lends its model calls. */
export interface ModelCallPorts {
  client(name?: string): ChatClient;
  emit(body: RunEventBody, extra?: { trace_id?: string }): void;
  signal: AbortSignal;
  agent_id: string;
  journal: Journal;
  keys: StepKeys;
}

export async function callModel<R extends ReplyReading>(ports: ModelCallPorts, call: ModelCall<R>): Promise<ModelReply<R>> {
  const client = ports.client(call.model);
  const extra = call.trace_id !== undefined ? { trace_id: call.trace_id } : undefined;
  const key = ports.keys.nextModel();
  ports.emit({ type: "llm.request", model: client.model, messages: call.messages.length }, extra);
  // Write-ahead: the replies and tool results this request is built from are committed before it leaves.
  ports.journal.commit();
  const started = Date.now();
  let reply;
  try {
    reply = await client.chat({
      messages: call.messages,
      ...(call.tools?.length ? { tools: call.tools } : {}),
      signal: ports.signal,
      agent_id: ports.agent_id,
      onDelta: (text) => ports.emit({ type: "llm.delta", text }, extra),
    });
  } catch (err) {
    ports.emit({ type: "llm.error", model: client.model, error: describeError(err) }, extra);
    throw ports.signal.aborted ? new RuntimeError("ABORTED", "interrupted") : err;
  }
  const duration_ms = Date.now() - started;
  ports.journal.modelReply(key, reply);
  const reading = call.read?.(reply);
  ports.emit(
    {
      type: "llm.response",
      model: client.model,
      usage: reply.usage,
      duration_ms,
      ...(reading?.action_type !== undefined ? { action_type: reading.action_type } : {}),
      ...(reading?.observe !== undefined ? { observe: reading.observe } : {}),
      ...(reading?.thought !== undefined ? { thought: reading.thought } : {}),
      ...(reply.content ? { content: reply.content } : {}),
      ...(reply.tool_calls.length ? { tool_calls: reply.tool_calls } : {}),
      ...(reading?.error !== undefined ? { error: reading.error } : {}),
    },
    extra,
  );
  return { reply, reading };
}
