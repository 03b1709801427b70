/**
 * A run's events as OpenTelemetry spans, after the GenAI semantic conventions
 * (docs/telemetry.md): `invoke_agent <agent>` per agent step, `chat <model>`
 * per model call, `execute_tool <tool>` per tool call, nested as the run
 * nests. An EventSink: it sees events already masked by the bus, and only
 * ids, names, counts and (masked) error messages become attributes unless
 * content capture is on.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from "@opentelemetry/api";
import type { ResolvedTeam } from "../config/types.js";
import type { EventSink } from "../events/bus.js";
import type { EventOf, RunEvent, Usage } from "../events/types.js";

export interface OtelSinkOptions {
  /** Record prompts, answers, tool arguments and results as attributes. @default false */
  captureContent?: boolean;
  /** The team being run: names the provider of each model (`gen_ai.provider.name`). */
  team?: ResolvedTeam;
  /** Called right before the run's first span starts, with its task_id (the exporter derives the trace id from it). */
  beforeRootSpan?(task_id: string): void;
}

/** Longest captured text, in characters; longer is cut with a note. */
export const MAX_CAPTURED_CHARS = 16_384;

interface OpenChat {
  span: Span;
  /** Whether the request's model is known (a fallback's is learnt from its reply). */
  model: boolean;
}

interface OpenTool {
  span: Span;
  tool: string;
  call_id: string;
  /** An agent called as this tool has put its step under this span. */
  claimed: boolean;
}

/** An EventSink that turns one run's events into spans of `tracer`. Never throws. */
export function otelSink(tracer: Tracer, options: OtelSinkOptions = {}): EventSink {
  const capture = options.captureContent === true;
  const steps = new Map<string, Span>();
  const stepOrder: string[] = [];
  /** Model calls in progress, per step, oldest first (a step makes one at a time). */
  const chats = new Map<string, OpenChat[]>();
  /** Tool calls in progress, per step. */
  const tools = new Map<string, OpenTool[]>();

  const ids = (e: RunEvent): Attributes => ({
    "runtime.task_id": e.task_id,
    ...(e.step_id !== undefined ? { "runtime.step_id": e.step_id } : {}),
    ...(e.trace_id !== undefined ? { "runtime.trace_id": e.trace_id } : {}),
  });
  const under = (span: Span | undefined) => (span ? trace.setSpan(ROOT_CONTEXT, span) : ROOT_CONTEXT);
  const stepSpan = (e: RunEvent) => (e.step_id !== undefined ? steps.get(e.step_id) : undefined);

  function agentStarted(e: EventOf<"agent.started">): void {
    if (e.step_id === undefined) return;
    let parent: Span | undefined;
    if (e.parent_step_id !== undefined) {
      // An agent called as a tool nests under the tool call that called it; one a flow calls, under the flow's step.
      const calling = tools.get(e.parent_step_id)?.find((t) => t.tool === e.agent_id && !t.claimed);
      if (calling) calling.claimed = true;
      parent = calling?.span ?? steps.get(e.parent_step_id);
    } else {
      options.beforeRootSpan?.(e.task_id);
    }
    const attributes: Attributes = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": e.agent_id,
      "runtime.agent.kind": e.kind,
      ...ids(e),
      ...(e.parent_step_id !== undefined ? { "runtime.parent_step_id": e.parent_step_id } : {}),
      ...(capture ? { "gen_ai.input.messages": json([{ role: "user", parts: [textPart(e.input)] }]) } : {}),
    };
    const span = tracer.startSpan(`invoke_agent ${e.agent_id}`, { kind: SpanKind.INTERNAL, attributes }, under(parent));
    steps.set(e.step_id, span);
    stepOrder.push(e.step_id);
  }

  function agentFinished(e: EventOf<"agent.finished">): void {
    const span = stepSpan(e);
    if (!span || e.step_id === undefined) return;
    span.setAttributes({ ...usage(e.usage), "runtime.result_type": e.result_type });
    if (capture && e.answer !== undefined) {
      span.setAttribute("gen_ai.output.messages", json([{ role: "assistant", parts: [textPart(e.answer)], finish_reason: "stop" }]));
    }
    if (e.result_type === "error") fail(span, e.error);
    span.end();
    steps.delete(e.step_id);
  }

  function chatStarted(e: RunEvent, model: string | undefined, extra: Attributes = {}): void {
    if (e.step_id === undefined) return;
    const attributes: Attributes = {
      "gen_ai.operation.name": "chat",
      ...(model !== undefined ? { "gen_ai.request.model": model } : {}),
      ...provider(options.team, model),
      ...ids(e),
      ...extra,
    };
    const span = tracer.startSpan(model !== undefined ? `chat ${model}` : "chat", { kind: SpanKind.CLIENT, attributes }, under(stepSpan(e)));
    list(chats, e.step_id).push({ span, model: model !== undefined });
  }

  /** The step's oldest model call in progress, its request model named. */
  function chatEnding(e: RunEvent, model: string): Span | undefined {
    const open = e.step_id !== undefined ? chats.get(e.step_id)?.shift() : undefined;
    if (open && !open.model) {
      open.span.setAttributes({ "gen_ai.request.model": model, ...provider(options.team, model) });
      open.span.updateName(`chat ${model}`);
    }
    return open?.span;
  }

  function chatResponse(e: EventOf<"llm.response">): void {
    const span = chatEnding(e, e.model);
    if (!span) return;
    const finish = e.finish_reason ?? (e.tool_calls?.length ? "tool_calls" : "stop");
    span.setAttributes({
      "gen_ai.response.model": e.model,
      "gen_ai.response.finish_reasons": [finish],
      ...usage(e.usage),
      ...(e.model_name !== undefined ? { "runtime.model_name": e.model_name } : {}),
      ...(e.action_type !== undefined ? { "runtime.action_type": e.action_type } : {}),
    });
    if (capture) span.setAttribute("gen_ai.output.messages", json([outputMessage(e, finish)]));
    span.end();
  }

  function chatError(e: EventOf<"llm.error">): void {
    const span = chatEnding(e, e.model);
    if (!span) return;
    fail(span, e.error);
    span.end();
  }

  function toolStarted(e: EventOf<"tool.started">): void {
    if (e.step_id === undefined) return;
    const attributes: Attributes = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": e.tool,
      "gen_ai.tool.call.id": e.call_id,
      "gen_ai.tool.type": "function",
      ...ids(e),
      ...(capture ? { "gen_ai.tool.call.arguments": json(e.arguments) } : {}),
    };
    const span = tracer.startSpan(`execute_tool ${e.tool}`, { kind: SpanKind.INTERNAL, attributes }, under(stepSpan(e)));
    list(tools, e.step_id).push({ span, tool: e.tool, call_id: e.call_id, claimed: false });
  }

  function toolFinished(e: EventOf<"tool.finished">): void {
    const open = e.step_id !== undefined ? tools.get(e.step_id) : undefined;
    const index = open?.findIndex((t) => t.call_id === e.call_id) ?? -1;
    const entry = index >= 0 ? open!.splice(index, 1)[0] : undefined;
    if (!entry) return;
    if (e.ok && capture) entry.span.setAttribute("gen_ai.tool.call.result", json(e.result));
    if (!e.ok) fail(entry.span, e.error);
    entry.span.end();
  }

  /** Spans still open when the run ends (it was cancelled, or a bug): ended as errors, innermost first. */
  function runFinished(): void {
    const reason = "the run ended before this finished";
    const endStep = (step: string) => {
      for (const chat of chats.get(step)?.splice(0) ?? []) endFailed(chat.span, reason);
      for (const tool of tools.get(step)?.splice(0) ?? []) endFailed(tool.span, reason);
      const span = steps.get(step);
      if (span) endFailed(span, reason);
      steps.delete(step);
    };
    // A child step started after its caller: latest first ends children before the tool calls that called them.
    for (const step of [...stepOrder].reverse()) endStep(step);
    for (const step of [...chats.keys(), ...tools.keys()]) endStep(step);
  }

  return (event) => {
    try {
      switch (event.type) {
        case "agent.started":
          return agentStarted(event);
        case "agent.finished":
          return agentFinished(event);
        case "llm.request":
          return chatStarted(event, event.model, { "runtime.request.messages": event.messages });
        case "llm.notice":
          // The model failed and the next of its fallbacks is asked: a new model call, its model named by the reply.
          if (event.notice === "fallback") chatStarted(event, undefined, { "runtime.fallback_from": event.model });
          return;
        case "llm.response":
          return chatResponse(event);
        case "llm.error":
          return chatError(event);
        case "tool.started":
          return toolStarted(event);
        case "tool.finished":
          return toolFinished(event);
        case "run.finished":
          return runFinished();
        default:
          return;
      }
    } catch {
      // Telemetry never breaks a run.
    }
  };

}

function list<T>(map: Map<string, T[]>, key: string): T[] {
  let items = map.get(key);
  if (!items) {
    items = [];
    map.set(key, items);
  }
  return items;
}

function fail(span: Span, error: string | undefined): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: error ?? "failed" });
  // The semantic conventions' value for an error without a well-known type.
  span.setAttribute("error.type", "_OTHER");
}

function endFailed(span: Span, reason: string): void {
  fail(span, reason);
  span.end();
}

function usage(u: Usage): Attributes {
  return { "gen_ai.usage.input_tokens": u.prompt_tokens, "gen_ai.usage.output_tokens": u.completion_tokens };
}

/** `gen_ai.provider.name` of a model by its wire name, when the team says which provider serves it. */
function provider(team: ResolvedTeam | undefined, model: string | undefined): Attributes {
  if (!team || model === undefined) return {};
  const config = Object.values(team.models).find((m) => m.model === model);
  return config ? { "gen_ai.provider.name": config.provider } : {};
}

function outputMessage(e: EventOf<"llm.response">, finish: string): Record<string, unknown> {
  const parts: unknown[] = [];
  if (e.reasoning) parts.push({ type: "reasoning", content: clip(e.reasoning) });
  if (e.content) parts.push(textPart(e.content));
  for (const call of e.tool_calls ?? []) parts.push({ type: "tool_call", id: call.id, name: call.name, arguments: clip(call.arguments) });
  return { role: "assistant", parts, finish_reason: finish };
}

function textPart(text: string): { type: "text"; content: string } {
  return { type: "text", content: clip(text) };
}

function json(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? "null";
  } catch {
    text = "[not JSON-serialisable]";
  }
  return clip(text);
}

function clip(text: string): string {
  return text.length <= MAX_CAPTURED_CHARS ? text : `${text.slice(0, MAX_CAPTURED_CHARS)}…[truncated: ${text.length} characters]`;
}
