/**
 * Reading a Messages API reply, whole or streamed, into a ChatResponse
 * (docs/model-servers.md#anthropic): text blocks are the content, `tool_use`
 * blocks the tool calls, thinking blocks the reasoning (shown) and reasoning
 * items (carried back as they came, anthropic-request.ts), and the usage
 * with the prompt cache's reads and writes counted in the prompt.
 */
import type { Usage } from "../events/types.js";
import { assemble, badReply, type ReadOptions } from "./openai-reply.js";
import type { ChatResponse, ReasoningItem } from "./types.js";

/** A content block of a reply, as loosely as read. */
interface WireBlock {
  type?: string;
  text?: string;
  id?: string;
  name?: string;
  input?: unknown;
  thinking?: string;
  signature?: string;
  data?: string;
}

/** The usage of a reply (or of a stream's `message_start` and `message_delta`). */
interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
  cache_read_input_tokens?: number | null;
}

/** A whole reply body. */
export function readMessage(data: unknown, options: ReadOptions, hint: string): ChatResponse {
  const body = data as { type?: string; content?: unknown; stop_reason?: string | null; usage?: WireUsage } | null;
  if (typeof body !== "object" || body === null || !Array.isArray(body.content)) throw badReply(options, "the reply is not a message", hint);
  return fromBlocks(body.content as WireBlock[], body.stop_reason ?? null, usageOf(body.usage), options);
}

function fromBlocks(blocks: WireBlock[], stop: string | null, usage: Usage, options: ReadOptions): ChatResponse {
  const text = blocks.flatMap((b) => (b.type === "text" && typeof b.text === "string" ? [b.text] : []));
  const thinking = blocks.filter((b) => b.type === "thinking" || b.type === "redacted_thinking");
  const calls = blocks.flatMap((b) =>
    b.type === "tool_use" && typeof b.name === "string"
      ? [{ id: b.id ?? null, name: b.name, arguments: typeof b.input === "string" ? b.input : JSON.stringify(b.input ?? {}) }]
      : [],
  );
  const reasoning = thinking.flatMap((b) => (b.thinking ? [b.thinking] : [])).join("\n\n");
  const reply = assemble(
    { content: text.length ? text.join("") : null, reasoning: reasoning || undefined, calls, finish_reason: finishReason(stop), usage },
    options,
  );
  const items: ReasoningItem[] = thinking.map((block) => ({ type: "reasoning", anthropic: block }));
  return items.length ? { ...reply, reasoning_items: items } : reply;
}

/** `stop_reason` in the runtime's words (Chat Completions' `finish_reason`). */
function finishReason(stop: string | null): string {
  switch (stop) {
    case "tool_use":
      return "tool_calls";
    case "max_tokens":
    case "model_context_window_exceeded":
      return "length";
    case "refusal":
      return "content_filter";
    default:
      return "stop";
  }
}

/** The reply's usage: prompt tokens are those sent fresh, read from the cache and written to it, together. */
function usageOf(usage: WireUsage | undefined): Usage {
  if (!usage || typeof usage.input_tokens !== "number") return { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, unknown: 1 };
  const read = usage.cache_read_input_tokens ?? 0;
  const written = usage.cache_creation_input_tokens ?? 0;
  const prompt_tokens = usage.input_tokens + read + written;
  const completion_tokens = usage.output_tokens ?? 0;
  return {
    prompt_tokens,
    completion_tokens,
    total_tokens: prompt_tokens + completion_tokens,
    ...(read ? { cached_tokens: read } : {}),
    ...(written ? { cache_write_tokens: written } : {}),
  };
}

/** A streamed reply, event by event (`message_start`, `content_block_*`, `message_delta`, `message_stop`). */
export class AnthropicStreamReader {
  private readonly blocks: Array<WireBlock & { json?: string }> = [];
  private usage: WireUsage | undefined;
  private stop: string | null = null;
  private events = 0;
  private started = false;

  constructor(
    private readonly options: ReadOptions,
    private readonly onDelta: ((text: string) => void) | undefined,
  ) {}

  /** Events read so far (for messages about a stream that stalled). */
  get count(): number {
    return this.events;
  }

  push(event: unknown): void {
    this.events++;
    const e = event as {
      type?: string;
      index?: number;
      message?: { usage?: WireUsage };
      content_block?: WireBlock;
      delta?: { type?: string; text?: string; partial_json?: string; thinking?: string; signature?: string; stop_reason?: string | null };
      usage?: WireUsage;
    };
    switch (e.type) {
      case "message_start":
        this.started = true;
        this.usage = { ...e.message?.usage };
        return;
      case "content_block_start":
        if (e.index !== undefined && e.content_block) this.blocks[e.index] = { ...e.content_block };
        return;
      case "content_block_delta": {
        const block = e.index !== undefined ? this.blocks[e.index] : undefined;
        if (!block || !e.delta) return;
        if (e.delta.type === "text_delta" && e.delta.text) {
          block.text = (block.text ?? "") + e.delta.text;
          this.onDelta?.(e.delta.text);
        } else if (e.delta.type === "input_json_delta") block.json = (block.json ?? "") + (e.delta.partial_json ?? "");
        else if (e.delta.type === "thinking_delta") block.thinking = (block.thinking ?? "") + (e.delta.thinking ?? "");
        else if (e.delta.type === "signature_delta") block.signature = (block.signature ?? "") + (e.delta.signature ?? "");
        return;
      }
      case "message_delta":
        if (e.delta?.stop_reason) this.stop = e.delta.stop_reason;
        // Its counts are cumulative: they replace message_start's where given.
        for (const [key, value] of Object.entries(e.usage ?? {})) if (typeof value === "number") (this.usage ??= {})[key as keyof WireUsage] = value;
        return;
      default:
        // content_block_stop, message_stop, and events a newer API adds: nothing to read.
        return;
    }
  }

  /** The whole reply; a stream without `message_start` is not a reply. */
  end(): ChatResponse {
    if (!this.started) throw badReply(this.options, this.events === 0 ? "the reply stream carried no events" : "the reply stream carried no message_start");
    const blocks = this.blocks
      .filter((b) => b !== undefined)
      .map(({ json, ...block }) => (block.type === "tool_use" && json !== undefined ? { ...block, input: json === "" ? "{}" : json } : block));
    return fromBlocks(blocks, this.stop, usageOf(this.usage), this.options);
  }
}
