/**
 * A run's events as OpenTelemetry spans, after the GenAI semantic conventions
 * (docs/telemetry.md): `invoke_agent <agent>` per agent step, `chat <model>`
 * per model call, `execute_tool <tool>` per tool call, nested as the run
 * nests, drawn from the run's projection (src/events/projection.ts,
 * docs/design/projection.md). An EventSink: it sees events already masked by the bus, and only
 * ids, names, counts and (masked) error messages become attributes unless
 * content capture is on.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Span, type Tracer } from "@opentelemetry/api";
import type { ResolvedTeam } from "../config/types.js";
import type { EventSink } from "../events/bus.js";
import { RunProjection, type ModelCall, type StepNode, type ToolCall } from "../events/projection.js";
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

/** An EventSink that turns one run's events into spans of `tracer`, drawn from the run's projection. Never throws. */
export function otelSink(tracer: Tracer, options: OtelSinkOptions = {}): EventSink {
  const projection = new RunProjection();
  const spans = new RunSpans(tracer, options);
  return (event) => {
    try {
      const node = projection.apply(event);
      if (event.type === "run.finished") return spans.runFinished();
      // Events outside any step (no step_id) make no span.
      if (event.step_id === undefined || node === undefined) return;
      switch (event.type) {
        case "agent.started":
          return node.kind === "step" ? spans.agentStarted(event, node) : undefined;
        case "agent.finished":
          return node.kind === "step" ? spans.agentFinished(event, node) : undefined;
        case "llm.request":
          return node.kind === "model" ? spans.chatStarted(event, node, { "runtime.request.messages": event.messages }) : undefined;
        case "llm.notice":
          // The model failed and the next of its fallbacks is asked: a new model call, its model named by the reply.
          return node.kind === "model" ? spans.chatStarted(event, node, { "runtime.fallback_from": event.model }) : undefined;
        case "llm.response":
          return node.kind === "model" ? spans.chatResponse(event, node) : undefined;
        case "llm.error":
          return node.kind === "model" ? spans.chatError(event, node) : undefined;
        case "tool.started":
          return node.kind === "tool" ? spans.toolStarted(event, node) : undefined;
        case "tool.finished":
          return node.kind === "tool" ? spans.toolFinished(event, node) : undefined;
        default:
          return;
      }
    } catch {
      // Telemetry never breaks a run.
    }
  };
}

/** The spans of one run: one per node of its projection (step, model call, tool call), opened and ended as the events come. */
class RunSpans {
  /** Spans open, by the projection's node id, in order of start. */
  private readonly open = new Map<string, Span>();
  /** Model calls whose span was started before their model was known (a fallback's). */
  private readonly unnamed = new Set<string>();
  private readonly capture: boolean;

  constructor(
    private readonly tracer: Tracer,
    private readonly options: OtelSinkOptions,
  ) {
    this.capture = options.captureContent === true;
  }

  agentStarted(e: EventOf<"agent.started">, step: StepNode): void {
    if (this.open.has(step.id)) return;
    if (step.parent === undefined) this.options.beforeRootSpan?.(e.task_id);
    const attributes: Attributes = {
      "gen_ai.operation.name": "invoke_agent",
      "gen_ai.agent.name": e.agent_id,
      "runtime.agent.kind": e.kind,
      ...ids(e),
      ...(e.parent_step_id !== undefined ? { "runtime.parent_step_id": e.parent_step_id } : {}),
      ...(this.capture ? { "gen_ai.input.messages": json([{ role: "user", parts: [textPart(e.input)] }]) } : {}),
    };
    // An agent called as a tool nests under the tool call that called it; one a flow calls, under the flow's step.
    const parent = step.called_by !== undefined && this.open.has(step.called_by) ? step.called_by : step.parent;
    this.start(step.id, `invoke_agent ${e.agent_id}`, SpanKind.INTERNAL, attributes, parent);
  }

  agentFinished(e: EventOf<"agent.finished">, step: StepNode): void {
    const span = this.open.get(step.id);
    if (!span) return;
    span.setAttributes({ ...usage(e.usage), "runtime.result_type": e.result_type });
    if (this.capture && e.answer !== undefined) {
      span.setAttribute("gen_ai.output.messages", json([{ role: "assistant", parts: [textPart(e.answer)], finish_reason: "stop" }]));
    }
    // The step's error code is its well-known type (docs/events.md#error-codes); traces of earlier versions have none.
    if (e.result_type === "error") fail(span, e.error, e.error_code);
    this.end(step.id);
  }

  chatStarted(e: RunEvent, call: ModelCall, extra: Attributes): void {
    const model = call.model;
    const attributes: Attributes = {
      "gen_ai.operation.name": "chat",
      ...(model !== undefined ? { "gen_ai.request.model": model } : {}),
      ...provider(this.options.team, model),
      ...ids(e),
      ...extra,
    };
    this.start(call.id, model !== undefined ? `chat ${model}` : "chat", SpanKind.CLIENT, attributes, call.step);
    if (model === undefined) this.unnamed.add(call.id);
  }

  chatResponse(e: EventOf<"llm.response">, call: ModelCall): void {
    const span = this.chatEnding(call, e.model);
    if (!span) return;
    const finish = e.finish_reason ?? (e.tool_calls?.length ? "tool_calls" : "stop");
    span.setAttributes({
      "gen_ai.response.model": e.model,
      "gen_ai.response.finish_reasons": [finish],
      ...usage(e.usage),
      ...(e.model_name !== undefined ? { "runtime.model_name": e.model_name } : {}),
      ...(e.action_type !== undefined ? { "runtime.action_type": e.action_type } : {}),
    });
    if (this.capture) span.setAttribute("gen_ai.output.messages", json([outputMessage(e, finish)]));
    this.end(call.id);
  }

  chatError(e: EventOf<"llm.error">, call: ModelCall): void {
    const span = this.chatEnding(call, e.model);
    if (!span) return;
    fail(span, e.error);
    this.end(call.id);
  }

  toolStarted(e: EventOf<"tool.started">, call: ToolCall): void {
    if (this.open.has(call.id)) return;
    const attributes: Attributes = {
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": e.tool,
      "gen_ai.tool.call.id": e.call_id,
      "gen_ai.tool.type": "function",
      ...ids(e),
      ...(this.capture ? { "gen_ai.tool.call.arguments": json(e.arguments) } : {}),
    };
    this.start(call.id, `execute_tool ${e.tool}`, SpanKind.INTERNAL, attributes, call.step);
  }

  toolFinished(e: EventOf<"tool.finished">, call: ToolCall): void {
    const span = this.open.get(call.id);
    if (!span) return;
    if (e.ok && this.capture) span.setAttribute("gen_ai.tool.call.result", json(e.result));
    if (!e.ok) fail(span, e.error);
    this.end(call.id);
  }

  /** Spans still open when the run ends (it was cancelled, or a bug): ended as errors, innermost (latest started) first. */
  runFinished(): void {
    for (const id of [...this.open.keys()].reverse()) {
      const span = this.open.get(id);
      if (span) fail(span, "the run ended before this finished");
      this.end(id);
    }
  }

  /** A model call's span, its request model named (a fallback's is learnt from its reply). */
  private chatEnding(call: ModelCall, model: string): Span | undefined {
    const span = this.open.get(call.id);
    if (span && this.unnamed.delete(call.id)) {
      span.setAttributes({ "gen_ai.request.model": model, ...provider(this.options.team, model) });
      span.updateName(`chat ${model}`);
    }
    return span;
  }

  private start(id: string, name: string, kind: SpanKind, attributes: Attributes, parent: string | undefined): void {
    const span = parent !== undefined ? this.open.get(parent) : undefined;
    this.open.set(id, this.tracer.startSpan(name, { kind, attributes }, span ? trace.setSpan(ROOT_CONTEXT, span) : ROOT_CONTEXT));
  }

  private end(id: string): void {
    const span = this.open.get(id);
    this.open.delete(id);
    span?.end();
  }
}

function ids(e: RunEvent): Attributes {
  return {
    "runtime.task_id": e.task_id,
    ...(e.step_id !== undefined ? { "runtime.step_id": e.step_id } : {}),
    ...(e.trace_id !== undefined ? { "runtime.trace_id": e.trace_id } : {}),
  };
}

function fail(span: Span, error: string | undefined, type?: string): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: error ?? "failed" });
  // `_OTHER`: the semantic conventions' value for an error without a well-known type.
  span.setAttribute("error.type", type ?? "_OTHER");
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
