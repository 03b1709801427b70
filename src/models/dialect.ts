/**
 * The habits of real Chat Completions servers, handled in one place
 * (docs/model-servers.md): reasoning text, chat templates with role rules, tool
 * calls without ids or written into the content, arguments as objects,
 * missing usage. Pure functions over the runtime's own message and reply
 * types; `openai-client.ts` applies them on the way out and on the way in.
 */
import type { Usage } from "../events/types.js";
import type { ChatMessage, ToolCallRequest } from "./types.js";

// ---------------------------------------------------------------- reasoning

/**
 * Splits reasoning written into the content (`<think>...</think>` at its
 * start, as Qwen3, QwQ and DeepSeek-R1 distills do without a reasoning
 * parser; or a lone `</think>` when the template opened the block itself)
 * from the reply proper. An unclosed `<think>` is all reasoning.
 */
export function splitThink(content: string | null): { content: string | null; reasoning?: string } {
  if (content === null) return { content };
  const open = /^\s*<think>/i.exec(content);
  const closeAt = content.search(/<\/think>/i);
  if (!open && closeAt < 0) return { content };
  if (!open && content.slice(0, closeAt).includes("<think>")) return { content };
  const start = open ? open[0].length : 0;
  if (closeAt < 0) return { content: "", reasoning: content.slice(start).trim() };
  const reasoning = content.slice(start, closeAt).trim();
  const rest = content.slice(closeAt + "</think>".length).trim();
  return reasoning ? { content: rest, reasoning } : { content: rest };
}

/**
 * Strips think blocks from streamed text as it arrives, so `llm.delta`
 * carries the reply and not the thinking. Feed every delta; `text` is what
 * may be shown as reply text so far.
 */
export class ThinkFilter {
  private buffer = "";
  private state: "start" | "thinking" | "reply" = "start";

  /** The part of `delta` that belongs to the reply (may be empty). */
  push(delta: string): string {
    if (this.state === "reply") return delta;
    this.buffer += delta;
    if (this.state === "start") {
      const trimmed = this.buffer.trimStart();
      if (trimmed.length < "<think>".length && "<think>".startsWith(trimmed.toLowerCase())) return "";
      if (!trimmed.toLowerCase().startsWith("<think>")) {
        // A lone </think> (template-opened block) is only known at its end; deltas before it are shown.
        this.state = "reply";
        const out = this.buffer;
        this.buffer = "";
        return out;
      }
      this.state = "thinking";
    }
    const close = this.buffer.search(/<\/think>/i);
    if (close < 0) return "";
    this.state = "reply";
    const out = this.buffer.slice(close + "</think>".length).trimStart();
    this.buffer = "";
    return out;
  }
}

/** A reply's `content`, read: its text, and the reasoning its thinking parts carried. */
export interface ContentRead {
  text: string | null;
  reasoning?: string;
}

/**
 * `content` as servers send it: a string, or a list of parts (Mistral's
 * reasoning models: `{"type": "text", "text": ...}` and `{"type": "thinking",
 * "thinking": [{"type": "text", "text": ...}]}`), streamed or not. Text parts
 * are joined; thinking parts are reasoning, never the reply. Anything else
 * (null, a part of an unknown type) carries no text.
 */
export function readContent(content: unknown): ContentRead {
  if (typeof content === "string") return { text: content };
  if (!Array.isArray(content)) return { text: null };
  let text: string | null = null;
  let reasoning = "";
  for (const part of content as unknown[]) {
    if (typeof part === "string") text = (text ?? "") + part;
    if (typeof part !== "object" || part === null) continue;
    const { type, text: partText, thinking } = part as { type?: unknown; text?: unknown; thinking?: unknown };
    if (type === "text" && typeof partText === "string") text = (text ?? "") + partText;
    else if (type === "thinking") reasoning += readContent(thinking).text ?? "";
  }
  return reasoning ? { text, reasoning } : { text };
}

// ---------------------------------------------------------------- the token limit's name

/**
 * OpenAI's reasoning models (o1, o3, o4-mini, ...) and the gpt-5 family refuse
 * `max_tokens` and want `max_completion_tokens`; recognised by model id, also
 * behind a router's prefix (`openai/o3`, `azure/gpt-5-mini`).
 */
const WANTS_COMPLETION_TOKENS = /(?:^|\/)(?:o\d|gpt-5)(?:$|[-.:_])/i;

/** The Chat Completions field that carries a model's `max_tokens`: as set, else by model id. */
export function maxTokensParam(model: string, forced: "max_tokens" | "max_completion_tokens" | undefined): "max_tokens" | "max_completion_tokens" {
  return forced ?? (WANTS_COMPLETION_TOKENS.test(model) ? "max_completion_tokens" : "max_tokens");
}

// ---------------------------------------------------------------- chat templates with rules

/** The layouts a request can be sent in. */
export type RoleLayout = "as_is" | "alternate" | "no_system";

/** What a template's refusal says about the layout it wants, if it is one. */
export function layoutFromRefusal(message: string): RoleLayout | undefined {
  if (/system role (is )?not supported|system messages? (are|is) not (supported|allowed)/i.test(message)) return "no_system";
  if (
    /roles must alternate|must alternate user\/assistant|system message must be (at the beginning|first)|only user and assistant roles|successive user or assistant messages|interleave the user\/assistant/i.test(
      message,
    )
  ) {
    return "alternate";
  }
  return undefined;
}

/** What goes between two answers of the model when a template wants a user turn there. */
export const CONTINUE = "Continue.";

/** What goes between tool results and a user turn when a template wants an assistant turn there. */
export const NOTED = "Noted.";

/**
 * The same conversation laid out for a strict chat template: one system
 * message, first (or, for `no_system`, its text at the head of the first
 * user message); user and assistant turns alternating from a user turn
 * (tool results and tool-calling assistant turns stand apart, as templates
 * treat them); consecutive user texts joined; a `Continue.` user turn
 * between two answers and after a final one, a `Noted.` assistant turn
 * between tool results and a user turn.
 */
export function layOut(messages: readonly ChatMessage[], layout: RoleLayout): ChatMessage[] {
  if (layout === "as_is") return [...messages];
  const system = messages.flatMap((m) => (m.role === "system" ? [m.content] : [])).join("\n\n");
  const out: ChatMessage[] = [];
  let expect: "user" | "assistant" = "user";
  for (const m of messages) {
    if (m.role === "system") continue;
    if (m.role === "tool" || (m.role === "assistant" && m.tool_calls?.length)) {
      out.push(m);
      continue;
    }
    if (m.role === "user") {
      const last = out[out.length - 1];
      if (expect === "assistant" && last?.role === "user") {
        // Attachments stay with the merged message (a layout never drops a file: docs/attachments.md).
        const attachments = [...(last.attachments ?? []), ...(m.attachments ?? [])];
        out[out.length - 1] = { role: "user", content: `${last.content}\n\n${m.content}`, ...(attachments.length ? { attachments } : {}) };
        continue;
      }
      // A user turn right after tool results: the template counts it against the previous user turn.
      if (expect === "assistant") out.push({ role: "assistant", content: NOTED });
      out.push(m);
      expect = "assistant";
      continue;
    }
    if (expect === "user") out.push({ role: "user", content: CONTINUE });
    out.push(m);
    expect = "user";
  }
  if (out.length === 0 || expect === "user") out.push({ role: "user", content: CONTINUE });
  if (!system) return out;
  if (layout === "alternate") return [{ role: "system", content: system }, ...out];
  const first = out.findIndex((m) => m.role === "user");
  const head = out[first] as Extract<ChatMessage, { role: "user" }>;
  out[first] = { ...head, content: `${system}\n\n${head.content}` };
  return out;
}

// ---------------------------------------------------------------- tool calls

/** A tool call as servers send it: id missing or repeated, arguments a string or an object. */
export interface WireToolCall {
  id?: string | null;
  name: string;
  arguments?: unknown;
}

/**
 * Tool calls with a unique, non-empty id each (a missing or repeated id gets
 * `call_<n>` made unique) and arguments as JSON text (an object is encoded).
 */
export function normaliseToolCalls(calls: readonly WireToolCall[]): ToolCallRequest[] {
  const seen = new Set<string>();
  return calls.map((call, i) => {
    let id = typeof call.id === "string" ? call.id.trim() : "";
    if (!id || seen.has(id)) {
      let n = i + 1;
      do id = `call_${n++}`;
      while (seen.has(id) || calls.some((c) => c.id === id));
    }
    seen.add(id);
    const args = call.arguments;
    const text = typeof args === "string" ? args : args === undefined || args === null ? "{}" : JSON.stringify(args);
    return { id, name: call.name, arguments: text };
  });
}

const TOOL_CALL_BLOCK = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/gi;

/**
 * Hermes-style templates write calls into the content as
 * `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`. Returns the
 * calls found (blocks that are not such JSON are left in the content) and
 * the content without them.
 */
export function toolCallsInContent(content: string | null): { content: string | null; calls: WireToolCall[] } {
  if (content === null || !/<tool_call>/i.test(content)) return { content, calls: [] };
  const calls: WireToolCall[] = [];
  const rest = content.replace(TOOL_CALL_BLOCK, (block, body: string) => {
    try {
      const value = JSON.parse(body) as { name?: unknown; arguments?: unknown; parameters?: unknown };
      if (typeof value?.name !== "string") return block;
      calls.push({ name: value.name, arguments: value.arguments ?? value.parameters ?? {} });
      return "";
    } catch {
      return block;
    }
  });
  return { content: calls.length ? rest.trim() || null : content, calls };
}

// ---------------------------------------------------------------- usage

/** Usage as servers report it: Chat Completions' names, the Responses API's, and DeepSeek's cache count. */
export interface WireUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  total_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number | null } | null;
  completion_tokens_details?: { reasoning_tokens?: number | null } | null;
  /** DeepSeek's name for the cached part of the prompt. */
  prompt_cache_hit_tokens?: number;
  input_tokens?: number;
  output_tokens?: number;
  input_tokens_details?: { cached_tokens?: number | null } | null;
  output_tokens_details?: { reasoning_tokens?: number | null } | null;
}

/**
 * Usage as reported; missing or partial usage is counted as unknown instead
 * of read as 0 (see `Usage.unknown`). Cached and reasoning tokens are kept
 * where the server reports them above 0 (docs/budgets.md).
 */
export function usageOf(usage: WireUsage | null | undefined): Usage {
  const prompt = usage?.prompt_tokens ?? usage?.input_tokens;
  const completion = usage?.completion_tokens ?? usage?.output_tokens;
  const complete = typeof prompt === "number" && typeof completion === "number";
  const prompt_tokens = typeof prompt === "number" ? prompt : 0;
  const completion_tokens = typeof completion === "number" ? completion : 0;
  const total_tokens = typeof usage?.total_tokens === "number" ? usage.total_tokens : prompt_tokens + completion_tokens;
  const cached = count(usage?.prompt_tokens_details?.cached_tokens ?? usage?.input_tokens_details?.cached_tokens ?? usage?.prompt_cache_hit_tokens);
  const reasoning = count(usage?.completion_tokens_details?.reasoning_tokens ?? usage?.output_tokens_details?.reasoning_tokens);
  return {
    prompt_tokens,
    completion_tokens,
    total_tokens,
    ...(cached ? { cached_tokens: cached } : {}),
    ...(reasoning ? { reasoning_tokens: reasoning } : {}),
    ...(complete ? {} : { unknown: 1 }),
  };
}

function count(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value > 0 ? value : 0;
}
