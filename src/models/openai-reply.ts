/**
 * Reading a Chat Completions reply, plain or streamed, into a ChatResponse,
 * whatever the server's habits (src/models/dialect.ts, docs/model-servers.md):
 * reasoning apart from the content, tool calls with unique ids and string
 * arguments (also when written into the content), usage marked unknown when
 * missing, and a reply that is not a completion at all reported as such.
 */
import { RuntimeError } from "../errors.js";
import type { Usage } from "../events/types.js";
import { normaliseToolCalls, readContent, splitThink, ThinkFilter, toolCallsInContent, usageOf, type WireToolCall, type WireUsage } from "./dialect.js";
import type { ChatResponse } from "./types.js";

/** What a reply is read with. */
export interface ReadOptions {
  model: string;
  request_id: string | null | undefined;
  /** Tools were offered: calls written into the content are read as calls. */
  tools: boolean;
}

/** The reply's `message`, as loosely as servers send it. */
interface WireMessage {
  content?: unknown;
  reasoning_content?: unknown;
  reasoning?: unknown;
  tool_calls?: Array<{ id?: string | null; type?: string; function?: { name?: unknown; arguments?: unknown } }> | null;
}

/** A non-streamed reply body. */
export function readCompletion(data: unknown, options: ReadOptions, hint: string): ChatResponse {
  if (typeof data !== "object" || data === null) {
    // A web page or a proxy answering 200: not an OpenAI-compatible endpoint at this URL.
    throw badReply(options, "the reply is not a chat completion", hint);
  }
  const body = data as { choices?: Array<{ message?: WireMessage; finish_reason?: string | null }>; usage?: WireUsage | null };
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined;
  if (!choice?.message) throw badReply(options, "the reply has no choices");
  const message = choice.message;
  const calls: WireToolCall[] = [];
  for (const call of message.tool_calls ?? []) {
    if (call.type !== undefined && call.type !== "function") continue;
    if (typeof call.function?.name === "string") calls.push({ id: call.id ?? null, name: call.function.name, arguments: call.function.arguments });
  }
  const content = readContent(message.content);
  const reasoning = joined(textOf(message.reasoning_content) ?? textOf(message.reasoning), content.reasoning);
  return assemble({ content: content.text, reasoning, calls, finish_reason: choice.finish_reason ?? "stop", usage: usageOf(body.usage) }, options);
}

/** The pieces of a reply, before the dialects are undone. */
export interface Parts {
  content: string | null;
  reasoning: string | undefined;
  calls: WireToolCall[];
  finish_reason: string;
  usage: Usage;
}

/** A reply from its pieces, the dialects undone: reasoning split off, calls in the content read as calls, ids made unique. */
export function assemble(parts: Parts, options: ReadOptions): ChatResponse {
  const split = splitThink(parts.content);
  let content = split.content;
  let calls = parts.calls;
  if (calls.length === 0 && options.tools) {
    const found = toolCallsInContent(content);
    if (found.calls.length > 0) ({ content, calls } = found);
  }
  const reasoning = [parts.reasoning, split.reasoning].filter((r): r is string => !!r?.trim()).join("\n\n");
  return {
    content,
    tool_calls: normaliseToolCalls(calls),
    usage: parts.usage,
    finish_reason: calls.length > 0 && parts.finish_reason === "stop" ? "tool_calls" : parts.finish_reason,
    ...(reasoning ? { reasoning } : {}),
    ...(options.request_id ? { request_id: options.request_id } : {}),
  };
}

/** A piece of a streamed tool call. */
interface WireDeltaCall {
  index?: number;
  id?: string | null;
  function?: { name?: string; arguments?: unknown };
}

/** A streamed reply, chunk by chunk. */
export class StreamReader {
  private content = "";
  private sawContent = false;
  private reasoning = "";
  private finish = "stop";
  private usage: Usage | undefined;
  private readonly calls: Array<WireToolCall & { arguments: string }> = [];
  private chunks = 0;
  private withChoices = 0;
  private readonly think = new ThinkFilter();

  constructor(
    private readonly options: ReadOptions,
    private readonly onDelta: ((text: string) => void) | undefined,
  ) {}

  /** Chunks read so far (for messages about a stream that stalled). */
  get count(): number {
    return this.chunks;
  }

  push(chunk: unknown): void {
    this.chunks++;
    const c = chunk as {
      usage?: WireUsage | null;
      choices?: Array<{ delta?: Omit<WireMessage, "tool_calls"> & { tool_calls?: WireDeltaCall[] | null }; finish_reason?: string | null }>;
    };
    if (c.usage) this.usage = usageOf(c.usage);
    const choice = Array.isArray(c.choices) ? c.choices[0] : undefined;
    if (!choice) return;
    this.withChoices++;
    const delta = choice.delta ?? {};
    // A delta's content may be a list of parts too (Mistral), its thinking parts reasoning.
    const content = readContent(delta.content);
    const reasoning = joined(textOf(delta.reasoning_content) ?? textOf(delta.reasoning), content.reasoning);
    if (reasoning) this.reasoning += reasoning;
    if (content.text) {
      this.sawContent = true;
      this.content += content.text;
      const shown = this.think.push(content.text);
      if (shown) this.onDelta?.(shown);
    }
    for (const piece of delta.tool_calls ?? []) {
      const slot = this.slotFor(piece);
      if (piece.id) slot.id = piece.id;
      if (piece.function?.name) slot.name += piece.function.name;
      const args = piece.function?.arguments;
      if (typeof args === "string") slot.arguments += args;
      else if (args !== undefined && args !== null) slot.arguments += JSON.stringify(args);
    }
    if (choice.finish_reason) this.finish = choice.finish_reason;
  }

  /**
   * The call a delta continues. Deltas are keyed by `index`, but servers bend
   * it: some omit it (Gemini, SGLang: one call per chunk), some label every
   * call 0 (Ollama). A delta carrying an id other than its slot's, or a name
   * when its slot already has one and no id says otherwise, starts a call.
   */
  private slotFor(piece: WireDeltaCall): WireToolCall & { arguments: string } {
    const fresh = () => {
      const slot = { id: null, name: "", arguments: "" };
      this.calls.push(slot);
      return slot;
    };
    const existing = piece.index !== undefined ? this.calls[piece.index] : this.calls.at(-1);
    if (!existing) {
      if (piece.index === undefined) return fresh();
      return (this.calls[piece.index] = { id: null, name: "", arguments: "" });
    }
    const otherId = !!piece.id && !!existing.id && piece.id !== existing.id;
    const secondName = !piece.id && !!piece.function?.name && existing.name !== "" && piece.index === undefined;
    return otherId || secondName ? fresh() : existing;
  }

  /** The whole reply; a stream that carried no choices at all is not a reply. */
  end(): ChatResponse {
    if (this.withChoices === 0) {
      const what = this.chunks === 0 ? "the reply stream carried no chunks" : `the reply stream carried ${this.chunks} chunk(s) and no choices`;
      throw badReply(this.options, what);
    }
    return assemble(
      {
        content: this.sawContent ? this.content : null,
        reasoning: this.reasoning || undefined,
        calls: this.calls.filter((c) => c !== undefined && c.name !== ""),
        finish_reason: this.finish,
        usage: this.usage ?? usageOf(undefined),
      },
      this.options,
    );
  }
}

/** Reasoning from the fields and from thinking parts, when a server sends both. */
function joined(a: string | undefined, b: string | undefined): string | undefined {
  return a && b ? `${a}\n\n${b}` : a || b;
}

function textOf(value: unknown): string | undefined {
  return typeof value === "string" && value !== "" ? value : undefined;
}

export function badReply(options: Pick<ReadOptions, "model" | "request_id">, what: string, hint?: string): RuntimeError {
  const id = options.request_id ? ` (request id ${options.request_id})` : "";
  return new RuntimeError("MODEL_BAD_REPLY", `model ${options.model}: ${what}${id}${hint ? `; ${hint}` : ""}`);
}
