/**
 * The test server's Anthropic Messages API (`POST /v1/messages`): a request
 * read as the chat request it amounts to (so the same replies and scripts
 * answer it), and the reply written as a `message`, or as its event stream
 * (`message_start`, `content_block_start`/`_delta`/`_stop`, `message_delta`,
 * `message_stop`), in the shapes of the `@anthropic-ai/sdk` types
 * (resources/messages/messages.d.ts). A prompt cache is kept as Anthropic's
 * is: the prefix up to each `cache_control` breakpoint is written on first
 * sight and read after, and the usage says so (`cache_creation_input_tokens`,
 * `cache_read_input_tokens`), counting a token as four characters.
 */
import { createHash } from "node:crypto";
import type { ChatBody } from "./openai-server.js";

type Block = Record<string, unknown> & { type?: string };
interface WireMessage {
  role?: string;
  content?: string | Block[];
}

/** The chat request an Anthropic request amounts to: system, user, assistant (tool calls) and tool messages. */
export function chatBodyOfAnthropic(body: ChatBody): ChatBody {
  const messages: Array<Record<string, unknown>> = [];
  const system = body["system"];
  const systemText = typeof system === "string" ? system : Array.isArray(system) ? (system as Block[]).map((b) => String(b["text"] ?? "")).join("\n\n") : "";
  if (systemText) messages.push({ role: "system", content: systemText });
  for (const message of (body.messages ?? []) as WireMessage[]) {
    const blocks: Block[] = typeof message.content === "string" ? [{ type: "text", text: message.content }] : (message.content ?? []);
    const text = blocks.flatMap((b) => (b.type === "text" ? [String(b["text"])] : [])).join("");
    if (message.role === "assistant") {
      const calls = blocks.flatMap((b) =>
        b.type === "tool_use" ? [{ id: b["id"], type: "function", function: { name: b["name"], arguments: JSON.stringify(b["input"] ?? {}) } }] : [],
      );
      messages.push({ role: "assistant", content: text || null, ...(calls.length ? { tool_calls: calls } : {}) });
      continue;
    }
    for (const b of blocks) if (b.type === "tool_result") messages.push({ role: "tool", tool_call_id: b["tool_use_id"], content: resultText(b["content"]) });
    if (text || !blocks.some((b) => b.type === "tool_result")) messages.push({ role: "user", content: text });
  }
  const tools = ((body.tools ?? []) as Block[]).map((t) => ({
    type: "function",
    function: { name: t["name"], description: t["description"], parameters: t["input_schema"] },
  }));
  return { model: body.model, stream: body.stream === true, messages, ...(tools.length ? { tools } : {}) };
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  return Array.isArray(content) ? (content as Block[]).map((b) => String(b["text"] ?? "")).join("") : "";
}

/** What Problems Anthropic would answer 400 for, that the runtime must never send. */
export function anthropicProblems(body: ChatBody): string[] {
  const problems: string[] = [];
  if (typeof body["max_tokens"] !== "number") problems.push("max_tokens: Field required");
  const messages = (body.messages ?? []) as WireMessage[];
  for (const [i, m] of messages.entries()) {
    if (m.role !== "user" && m.role !== "assistant") problems.push(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    const blocks = blocksOf(m);
    if (m.role === "user" && blocks.some((b) => b.type === "tool_result") && blocks[0]?.type !== "tool_result")
      problems.push(`messages.${i}: tool_result blocks must come first in the user message`);
  }
  const breakpoints = countBreakpoints(body);
  if (breakpoints > 4) problems.push(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`);
  return problems;
}

function countBreakpoints(body: ChatBody): number {
  return JSON.stringify([body.tools, body["system"], body.messages]).split('"cache_control"').length - 1;
}

/** The prompt cache of one server: prefixes written, by hash. */
export class PromptCache {
  private readonly written = new Set<string>();

  /**
   * The prompt's tokens, and those read from the cache and written to it:
   * the prompt is tools, then system, then messages, and each breakpoint
   * ends a prefix; the longest prefix seen before is read, the rest up to
   * the last breakpoint written.
   */
  usage(body: ChatBody): { input_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number } {
    const parts: unknown[] = [
      ...((body.tools ?? []) as Block[]),
      ...systemBlocks(body["system"]),
      ...((body.messages ?? []) as WireMessage[]).flatMap(blocksOf),
    ];
    const tokensTo = (end: number) => Math.ceil(JSON.stringify(parts.slice(0, end).map(withoutCacheControl)).length / 4);
    const total = tokensTo(parts.length);
    const ends = parts.flatMap((p, i) => ((p as Block)["cache_control"] ? [i + 1] : []));
    let read = 0;
    let upTo = 0;
    for (const end of ends) {
      const hash = createHash("sha256")
        .update(JSON.stringify([body.model, parts.slice(0, end).map(withoutCacheControl)]))
        .digest("hex");
      if (this.written.has(hash)) {
        read = tokensTo(end);
        upTo = end;
      } else this.written.add(hash);
    }
    const lastEnd = ends.at(-1) ?? 0;
    const creation = lastEnd > upTo ? tokensTo(lastEnd) - read : 0;
    return { input_tokens: total - read - creation, cache_read_input_tokens: read, cache_creation_input_tokens: creation };
  }
}

function systemBlocks(system: unknown): Block[] {
  return typeof system === "string" ? [{ type: "text", text: system }] : Array.isArray(system) ? (system as Block[]) : [];
}

function blocksOf(message: WireMessage): Block[] {
  return typeof message.content === "string" ? [{ type: "text", text: message.content }] : (message.content ?? []);
}

function withoutCacheControl(part: unknown): unknown {
  const { cache_control: _dropped, ...rest } = part as Block;
  return rest;
}

/** A reply in Anthropic's terms. */
export interface AnthropicPlan {
  id: string;
  model: string;
  content: string | null;
  tool_calls: Array<{ id: string; name: string; arguments: string }>;
  reasoning?: string;
  /** `end_turn`, `tool_use`, `max_tokens`. */
  stop_reason: string;
  usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number };
}

/** The reply's content blocks: thinking (with a signature), text, tool_use. */
function contentBlocks(plan: AnthropicPlan): Block[] {
  return [
    ...(plan.reasoning ? [{ type: "thinking", thinking: plan.reasoning, signature: signatureOf(plan.reasoning) }] : []),
    ...(plan.content ? [{ type: "text", text: plan.content, citations: null }] : []),
    ...plan.tool_calls.map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: JSON.parse(c.arguments || "{}") as unknown })),
  ];
}

/** The signature a thinking block carries, which the server checks when it comes back. */
export function signatureOf(thinking: string): string {
  return createHash("sha256").update(`sig:${thinking}`).digest("base64");
}

function usageBody(usage: AnthropicPlan["usage"]) {
  return { ...usage, cache_creation: null, server_tool_use: null, service_tier: "standard" };
}

/** A whole reply: a `message`. */
export function anthropicMessage(plan: AnthropicPlan): Record<string, unknown> {
  return {
    id: plan.id,
    type: "message",
    role: "assistant",
    model: plan.model,
    content: contentBlocks(plan),
    stop_reason: plan.stop_reason,
    stop_sequence: null,
    usage: usageBody(plan.usage),
  };
}

/** A streamed reply: its SSE events, each `event: <type>` and `data: <json>`. */
export function anthropicEvents(plan: AnthropicPlan, chunkSize: number): string[] {
  const events: Array<Record<string, unknown> & { type: string }> = [];
  const { output_tokens: _later, ...startUsage } = plan.usage;
  events.push({
    type: "message_start",
    message: { ...anthropicMessage(plan), content: [], stop_reason: null, usage: usageBody({ ...startUsage, output_tokens: 1 } as AnthropicPlan["usage"]) },
  });
  events.push({ type: "ping" });
  contentBlocks(plan).forEach((block, index) => {
    if (block.type === "thinking") {
      events.push({ type: "content_block_start", index, content_block: { type: "thinking", thinking: "", signature: "" } });
      for (const piece of split(String(block["thinking"]), chunkSize))
        events.push({ type: "content_block_delta", index, delta: { type: "thinking_delta", thinking: piece } });
      events.push({ type: "content_block_delta", index, delta: { type: "signature_delta", signature: block["signature"] } });
    } else if (block.type === "text") {
      events.push({ type: "content_block_start", index, content_block: { type: "text", text: "", citations: null } });
      for (const piece of split(String(block["text"]), chunkSize))
        events.push({ type: "content_block_delta", index, delta: { type: "text_delta", text: piece } });
    } else {
      events.push({ type: "content_block_start", index, content_block: { type: "tool_use", id: block["id"], name: block["name"], input: {} } });
      for (const piece of split(JSON.stringify(block["input"]), chunkSize)) {
        events.push({ type: "content_block_delta", index, delta: { type: "input_json_delta", partial_json: piece } });
      }
    }
    events.push({ type: "content_block_stop", index });
  });
  events.push({ type: "message_delta", delta: { stop_reason: plan.stop_reason, stop_sequence: null }, usage: { output_tokens: plan.usage.output_tokens } });
  events.push({ type: "message_stop" });
  return events.map((e) => `event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
}

/** The thinking blocks sent back whose signature this server did not give: what Anthropic refuses. */
export function forgedThinking(body: ChatBody): string | undefined {
  for (const m of (body.messages ?? []) as WireMessage[]) {
    for (const b of blocksOf(m)) {
      if (b.type === "thinking" && b["signature"] !== signatureOf(String(b["thinking"]))) return "messages: thinking block has an invalid signature";
    }
  }
  return undefined;
}

function split(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces.length ? pieces : [""];
}
