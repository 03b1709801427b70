/**
 * A ChatRequest as the body of Anthropic's Messages API
 * (docs/model-servers.md#anthropic): the system messages as `system`, the
 * turns as alternating user and assistant messages of content blocks (tool
 * calls as `tool_use`, results as `tool_result` in the next user message,
 * thinking blocks carried back first on the reply they came with, files as
 * `image` and `document` blocks), and, with `cache` on, the prompt cache's
 * breakpoints (docs/model-servers.md#prompt-caching).
 */
import type { MessageCreateParamsNonStreaming, MessageParam, TextBlockParam, Tool } from "@anthropic-ai/sdk/resources/messages/messages";
import type { OpenAIModelConfig } from "../config/types.js";
import type { ChatMessage, ChatRequest, ReasoningItem } from "./types.js";

/** `max_tokens` is required by the Messages API; sent when the model's entry sets none. */
export const ANTHROPIC_MAX_TOKENS = 4096;

type Block = Exclude<MessageParam["content"], string>[number];

const EPHEMERAL = { type: "ephemeral" } as const;

/** The system text of a request, as one string. */
export function systemText(request: ChatRequest): string {
  return request.messages.flatMap((m) => (m.role === "system" ? [m.content] : [])).join("\n\n");
}

/**
 * The request body; `stream` is added by the caller. `previousSystem`, the
 * system text of the agent's request before, splits this one's where they
 * part (at a paragraph): the head that stays is cached apart from a tail
 * that changes every turn (a kind's "current state").
 */
export function anthropicBody(config: OpenAIModelConfig, request: ChatRequest, previousSystem?: string): MessageCreateParamsNonStreaming {
  const system = systemText(request);
  const messages = turns(request.messages.filter((m) => m.role !== "system"));
  const tools: Tool[] = (request.tools ?? []).map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters as Tool["input_schema"] }));
  const systemBlocks: TextBlockParam[] = splitAtChange(system, config.cache ? previousSystem : undefined).map((text) => ({ type: "text", text }));
  if (config.cache) markCache(tools, systemBlocks, messages, request.messages);
  return {
    // extra_body first: the runtime's own fields win.
    ...(config.extra_body as object),
    model: config.model,
    max_tokens: config.max_tokens ?? ANTHROPIC_MAX_TOKENS,
    messages,
    ...(systemBlocks.length ? { system: systemBlocks } : {}),
    ...(tools.length ? { tools } : {}),
    ...(config.temperature !== undefined ? { temperature: config.temperature } : {}),
    ...(config.top_p !== undefined ? { top_p: config.top_p } : {}),
  };
}

/** `text` in two at the last paragraph break before it parts from `previous`; whole when they are the same or part in the first paragraph. */
function splitAtChange(text: string, previous: string | undefined): string[] {
  if (text === "") return [];
  if (previous === undefined || previous === text) return [text];
  let same = 0;
  while (same < text.length && text[same] === previous[same]) same++;
  const cut = text.lastIndexOf("\n\n", same);
  return cut > 0 ? [text.slice(0, cut + 2), text.slice(cut + 2)] : [text];
}

/**
 * The runtime's messages as Anthropic's: tool results are the user's, the
 * results of one reply's calls in one message, as the API wants them.
 * Other consecutive messages of one role stay apart: the API joins them.
 */
function turns(messages: ChatMessage[]): MessageParam[] {
  const out: MessageParam[] = [];
  let previous: ChatMessage["role"] | undefined;
  for (const message of messages) {
    const blocks = blocksOf(message);
    if (blocks.length === 0) continue;
    const last = out.at(-1);
    if (message.role === "tool" && previous === "tool" && last) (last.content as Block[]).push(...blocks);
    else out.push({ role: message.role === "assistant" ? "assistant" : "user", content: blocks });
    previous = message.role;
  }
  return out;
}

function blocksOf(message: ChatMessage): Block[] {
  switch (message.role) {
    case "system":
      return [];
    case "user": {
      const files: Block[] = (message.attachments ?? []).map((a) => {
        const data = a.data.toString("base64");
        return a.kind === "pdf"
          ? { type: "document", source: { type: "base64", media_type: "application/pdf", data } }
          : { type: "image", source: { type: "base64", media_type: a.media_type as "image/png", data } };
      });
      return [...files, { type: "text", text: message.content }];
    }
    case "tool":
      return [{ type: "tool_result", tool_use_id: message.tool_call_id, content: message.content }];
    case "assistant": {
      const thinking = (message.reasoning_items ?? []).flatMap((i) => thinkingBlock(i));
      const text: Block[] = message.content ? [{ type: "text", text: message.content }] : [];
      const calls: Block[] = (message.tool_calls ?? []).map((c) => ({ type: "tool_use", id: c.id, name: c.name, input: parseInput(c.arguments) }));
      return [...thinking, ...text, ...calls];
    }
  }
}

/** A reasoning item of an Anthropic reply (anthropic-reply.ts) as the thinking block the API wants back; others are not Anthropic's. */
function thinkingBlock(item: ReasoningItem): Block[] {
  const block = item["anthropic"] as Block | undefined;
  return block ? [block] : [];
}

/** A tool call's arguments as the object `tool_use` carries; text that is no object goes as `{}` (the tool's result said why). */
function parseInput(text: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

/** The head of the summary compaction puts in place of the older turns (docs/context.md). */
const SUMMARY = /^Summary of the earlier part of this work \(/;

/**
 * The cache's breakpoints, four at most as the API allows: the last tool,
 * the system prompt (its head, when its tail changes), the compaction summary when there is one (the prefix
 * up to it stays put until the next compaction), and the last message
 * before the newest turn (the conversation's stable prefix: what the next
 * request repeats), these two only when the system prompt stays as it was.
 */
function markCache(tools: Tool[], system: TextBlockParam[], messages: MessageParam[], source: ChatMessage[]): void {
  const lastTool = tools.at(-1);
  if (lastTool) lastTool.cache_control = EPHEMERAL;
  // The system's head: its changing tail, when split off, is left out of the cache.
  const stableSystem = system[0];
  if (stableSystem) stableSystem.cache_control = EPHEMERAL;
  // Behind a system tail that changes every turn the conversation is never the same prefix twice: a breakpoint there would write and never be read.
  if (system.length > 1) return;
  const summaryText = source.find((m) => m.role === "assistant" && m.content !== null && SUMMARY.test(m.content))?.content;
  const summary = summaryText === undefined ? -1 : messages.findIndex((m) => (m.content as Block[]).some((b) => b.type === "text" && b.text === summaryText));
  // The newest turn is the last message; the one before it is the last the next request repeats as it is.
  const prefix = messages.length - 2;
  for (const index of new Set([summary, prefix])) {
    const block = index >= 0 ? (messages[index]?.content as Block[] | undefined)?.at(-1) : undefined;
    if (block && block.type !== "thinking" && block.type !== "redacted_thinking") block.cache_control = EPHEMERAL;
  }
}
