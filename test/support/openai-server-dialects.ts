/**
 * Habits ("dialects") of real OpenAI-compatible servers for the test server
 * in openai-server.ts: how reasoning is rendered, chat templates that refuse
 * some role layouts, tool calls without ids / with object arguments / written
 * into the content, missing usage; plus what a strict server refuses
 * (`strictProblems`) and the fault-aware body writer.
 */
import type { ServerResponse } from "node:http";
import type { ChatBody } from "./openai-server.js";
import { parseObject } from "../../src/parse/json.js";

/** Server-wide habits of a real server; every field is off by default. */
export interface Dialect {
  /**
   * Where `MessageReply.reasoning` goes:
   * - `"think_tags"` (the default): `<think>\n…\n</think>\n\n` before the content;
   * - `"reasoning_content"` (DeepSeek, vLLM/SGLang reasoning parsers): a `reasoning_content`
   *   field (streamed as `delta.reasoning_content` before any content); the server also
   *   answers 400 to any request whose messages carry a `reasoning_content` key, as DeepSeek does;
   * - `"reasoning"` (OpenRouter): the same field named `reasoning` (no refusal);
   * - `"thinking_parts"` (Mistral's magistral): `content` is a list of parts, a
   *   `{"type": "thinking", "thinking": [{"type": "text", "text": …}]}` part then a
   *   `{"type": "text", "text": …}` part; streamed, the thinking pieces and the first text
   *   piece come as such one-part lists, the later text pieces as strings.
   */
  reasoning?: "think_tags" | "reasoning_content" | "reasoning" | "thinking_parts";
  /**
   * A chat template with rules (Mistral, Gemma under vLLM), checked on every request; a
   * violation is a vLLM-style 400. `"alternate"`: system only at index 0, then user/assistant
   * alternating from user, where (as in Mistral's template) `tool` messages and assistant
   * messages with tool_calls stand apart from the alternation; a `tool` message must follow an
   * assistant message with tool_calls or another tool message.
   * `"no_system"`: no system message at all, otherwise the same alternation.
   */
  roles?: "alternate" | "no_system";
  /** Tool calls in replies come without an `id` key, with `id: ""`, or all with `id: "call_0"`. */
  tool_ids?: "missing" | "empty" | "duplicate";
  /** Non-streamed replies send `function.arguments` as a JSON object (streamed: unchanged). */
  object_arguments?: boolean;
  /**
   * Hermes-style templates: no `tool_calls` field; each call is written into the content as
   * `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>` after the text, finish_reason "stop".
   */
  tool_calls_in_content?: boolean;
  /** `"missing"`: no `usage` at all (not even when the stream asked for it); `"partial"`: only `{prompt_tokens}`. */
  usage?: "missing" | "partial";
}

// ---------------------------------------------------------------- request checks

type Message = Record<string, unknown>;

/** The message roles of a request body in order, e.g. ["system","user","assistant","tool","user"]. */
export function roleSequence(body: ChatBody | undefined): string[] {
  return messagesOf(body).map((m) => String(m["role"]));
}

/** The message vLLM's chat templates raise when roles do not alternate. */
export const ALTERNATE_MESSAGE = "Conversation roles must alternate user/assistant/user/assistant/...";
/** The message templates without a system role raise. */
export const NO_SYSTEM_MESSAGE = "System role not supported";
/** DeepSeek's answer to a request that sends reasoning_content back. */
export const REASONING_CONTENT_MESSAGE =
  "The reasoning_content is an intermediate result for display purposes only and will not be included in the context for inference. Please remove the reasoning_content from your input.";

/** A refusal: the HTTP status and JSON body to answer with. */
export interface Refusal {
  status: number;
  body: unknown;
}

/**
 * Everything a strict server (OpenAI, DeepSeek, vLLM) would refuse in this request, in message
 * order; empty when it is acceptable. The test server answers 400 with the first one.
 */
export function strictProblems(body: ChatBody | undefined): string[] {
  if (!Array.isArray(body?.messages)) return ["messages must be an array"];
  const messages = body.messages;
  const problems: string[] = [];
  const seenIds = new Set<string>();
  messages.forEach((m, i) => {
    problems.push(...messageShapeProblems(m, i));
    problems.push(...toolCallProblems(m, i, seenIds));
  });
  problems.push(...toolAnswerProblems(messages));
  if ("max_tokens" in body && typeof body.model === "string" && /^(o\d|gpt-5)/.test(body.model)) problems.push(MAX_TOKENS_MESSAGE);
  return problems;
}

/** OpenAI's answer to `max_tokens` sent to a reasoning model (o-series, gpt-5 family). */
export const MAX_TOKENS_MESSAGE = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";

function messageShapeProblems(m: Message, i: number): string[] {
  const problems: string[] = [];
  const where = `messages[${i}]`;
  for (const key of ["reasoning_content", "reasoning"]) {
    if (key in m) problems.push(`${where} has a '${key}' key; reasoning must not be sent back`);
  }
  const content = m["content"];
  if (m["role"] === "assistant") {
    if (content !== undefined && content !== null && typeof content !== "string") {
      problems.push(`${where}.content must be a string or null`);
    }
    if (typeof content === "string" && content.includes("<think>")) problems.push(`${where}.content contains <think>`);
  } else if (typeof content !== "string") {
    problems.push(`${where}.content must be a string`);
  }
  return problems;
}

function toolCallProblems(m: Message, i: number, seenIds: Set<string>): string[] {
  if (m["role"] !== "assistant" || m["tool_calls"] === undefined) return [];
  if (!Array.isArray(m["tool_calls"])) return [`messages[${i}].tool_calls must be an array`];
  const problems: string[] = [];
  (m["tool_calls"] as unknown[]).forEach((raw, j) => {
    const where = `messages[${i}].tool_calls[${j}]`;
    const call = (raw ?? {}) as Record<string, unknown>;
    const id = call["id"];
    if (typeof id !== "string" || id === "") problems.push(`${where}.id must be a non-empty string`);
    else if (seenIds.has(id)) problems.push(`${where}.id '${id}' is not unique in the request`);
    else seenIds.add(id);
    if (call["type"] !== "function") problems.push(`${where}.type must be 'function'`);
    const args = (call["function"] as Record<string, unknown> | undefined)?.["arguments"];
    if (typeof args !== "string") problems.push(`${where}.function.arguments must be a string`);
    else if (!parsesAsJson(args)) problems.push(`${where}.function.arguments is not valid JSON`);
  });
  return problems;
}

/** Each tool message answers a call of the assistant message right before its run of tool messages, each call exactly once. */
function toolAnswerProblems(messages: Message[]): string[] {
  const problems: string[] = [];
  let open: { at: number; pending: Set<string>; answered: Set<string> } | undefined;
  const closeRun = () => {
    for (const id of open?.pending ?? []) problems.push(`messages[${open?.at}].tool_calls id '${id}' has no tool message answering it`);
    open = undefined;
  };
  messages.forEach((m, i) => {
    if (m["role"] !== "tool") {
      closeRun();
      if (m["role"] === "assistant" && Array.isArray(m["tool_calls"]) && m["tool_calls"].length > 0) {
        const ids = (m["tool_calls"] as Array<Record<string, unknown> | null>).map((c) => c?.["id"]).filter((id) => typeof id === "string");
        open = { at: i, pending: new Set(ids as string[]), answered: new Set() };
      }
      return;
    }
    const id = m["tool_call_id"];
    if (open === undefined) problems.push(`messages[${i}] (tool) does not follow an assistant message with tool_calls`);
    else if (typeof id !== "string") problems.push(`messages[${i}].tool_call_id must be a string`);
    else if (open.answered.has(id)) problems.push(`messages[${i}].tool_call_id '${id}' answers a call that was already answered`);
    else if (!open.pending.has(id)) problems.push(`messages[${i}].tool_call_id '${id}' matches no call of messages[${open.at}]`);
    else {
      open.pending.delete(id);
      open.answered.add(id);
    }
  });
  closeRun();
  return problems;
}

/** The refusal a dialect answers this request with, if any (role rules, reasoning sent back). */
export function dialectRefusal(dialect: Dialect | undefined, body: ChatBody): Refusal | undefined {
  const roleMessage = dialect?.roles ? roleViolation(dialect.roles, messagesOf(body)) : undefined;
  if (roleMessage !== undefined) return { status: 400, body: vllmError(roleMessage) };
  if (dialect?.reasoning === "reasoning_content" && messagesOf(body).some((m) => "reasoning_content" in m)) {
    return {
      status: 400,
      body: { error: { message: REASONING_CONTENT_MESSAGE, type: "invalid_request_error", param: null, code: "invalid_request_error" } },
    };
  }
  return undefined;
}

function roleViolation(rule: "alternate" | "no_system", messages: Message[]): string | undefined {
  const roles = messages.map((m) => m["role"]);
  if (rule === "no_system" && roles.includes("system")) return NO_SYSTEM_MESSAGE;
  const rest = rule === "alternate" && roles[0] === "system" ? messages.slice(1) : messages;
  return alternates(rest) ? undefined : ALTERNATE_MESSAGE;
}

/**
 * user/assistant alternating from user, tool messages and tool-calling assistant messages left
 * out of the count (Mistral's template filters them the same way); a tool message only right
 * after an assistant with tool_calls or another tool message.
 */
function alternates(messages: Message[]): boolean {
  let expected = "user";
  let previous: Message | undefined;
  for (const m of messages) {
    const role = m["role"];
    if (role === "tool") {
      const follows = previous?.["role"] === "tool" || (previous?.["role"] === "assistant" && hasToolCalls(previous));
      if (!follows) return false;
    } else if (role === "assistant" && hasToolCalls(m)) {
      // stands apart from the alternation
    } else if (role === expected) {
      expected = expected === "user" ? "assistant" : "user";
    } else {
      return false;
    }
    previous = m;
  }
  return true;
}

/** vLLM's (and SGLang's) flat error body: no nested `error`, which the runtime copes with. */
export function vllmError(message: string): Record<string, unknown> {
  return { object: "error", message, type: "BadRequestError", param: null, code: 400 };
}

// ---------------------------------------------------------------- reply rendering

/** A tool call as the server means to send it (arguments already a string). */
export interface PlainToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A reply after the dialect: what goes on the wire. */
export interface RenderedMessage {
  content: string | null;
  /** A reasoning field next to the content (`reasoning_content` or `reasoning` dialects), or thinking parts in it. */
  reasoning?: { field: "reasoning_content" | "reasoning" | "thinking_parts"; text: string };
  /** Calls still sent as `tool_calls` (empty when written into the content). */
  tool_calls: PlainToolCall[];
  /** The finish reason when the reply does not set one. */
  finish_reason: string;
}

/** A thinking part as Mistral sends it. */
export const thinkingPart = (text: string) => ({ type: "thinking", thinking: [{ type: "text", text }] });

/** Applies the dialect's reasoning and tool-call habits to a reply's content and calls. */
export function renderMessage(content: string | null, calls: PlainToolCall[], reasoning: string | undefined, dialect: Dialect | undefined): RenderedMessage {
  const style = dialect?.reasoning ?? "think_tags";
  let text = content;
  if (reasoning !== undefined && style === "think_tags") text = `<think>\n${reasoning}\n</think>\n\n${content ?? ""}`;
  const field = reasoning !== undefined && style !== "think_tags" ? { field: style, text: reasoning } : undefined;
  if (dialect?.tool_calls_in_content && calls.length > 0) {
    const blocks = calls.map(hermesBlock);
    text = [...(text ? [text] : []), ...blocks].join("\n");
    return { content: text, ...(field ? { reasoning: field } : {}), tool_calls: [], finish_reason: "stop" };
  }
  return { content: text, ...(field ? { reasoning: field } : {}), tool_calls: calls, finish_reason: calls.length > 0 ? "tool_calls" : "stop" };
}

function hermesBlock(call: PlainToolCall): string {
  const args = parseObject(call.arguments);
  return `<tool_call>\n{"name": ${JSON.stringify(call.name)}, "arguments": ${args === undefined ? call.arguments : JSON.stringify(args)}}\n</tool_call>`;
}

/** The id key of a call as the dialect sends it: absent, empty, the same for all, or the call's own. */
function idField(call: PlainToolCall, dialect: Dialect | undefined): { id?: string } {
  switch (dialect?.tool_ids) {
    case "missing":
      return {};
    case "empty":
      return { id: "" };
    case "duplicate":
      return { id: "call_0" };
    default:
      return { id: call.id };
  }
}

/** `message.tool_calls[]` of a non-streamed reply. */
export function messageToolCall(call: PlainToolCall, dialect: Dialect | undefined): Record<string, unknown> {
  const args = dialect?.object_arguments ? (parseObject(call.arguments) ?? call.arguments) : call.arguments;
  return { ...idField(call, dialect), type: "function", function: { name: call.name, arguments: args } };
}

/** The first streamed delta of a call (later deltas carry only argument pieces). */
export function streamToolCallStart(call: PlainToolCall, index: number, dialect: Dialect | undefined): Record<string, unknown> {
  return { index, ...idField(call, dialect), type: "function", function: { name: call.name, arguments: "" } };
}

type FullUsage = { prompt_tokens: number; completion_tokens: number; total_tokens: number };

/** The usage object the dialect sends, or undefined when it sends none. */
export function usageForDialect(usage: FullUsage, dialect: Dialect | undefined): Partial<FullUsage> | undefined {
  if (dialect?.usage === "missing") return undefined;
  if (dialect?.usage === "partial") return { prompt_tokens: usage.prompt_tokens };
  return usage;
}

// ---------------------------------------------------------------- fault-aware body writing

/** How a body is delivered: all at once, dripped, cut and left hanging, or cut and reset. */
export interface Delivery {
  /** Wait this long between pieces (stops when the client goes away). */
  drip_ms?: number;
  /** After the pieces: end the response, hang (never end), or destroy the socket. */
  ending: "end" | "stall" | "reset";
}

/**
 * Writes `pieces` (headers already sent) then ends as asked. Without drip it writes synchronously,
 * so the undisturbed path behaves like plain `res.write` calls.
 */
export async function deliver(res: ServerResponse, pieces: Array<string | Buffer>, delivery: Delivery): Promise<void> {
  for (const [i, piece] of pieces.entries()) {
    if (i > 0 && delivery.drip_ms) {
      if (await sleepUnlessGone(delivery.drip_ms, res)) return;
    }
    if (gone(res)) return;
    const last = i === pieces.length - 1;
    // A reset waits until the last piece is flushed, so the client gets it before the socket dies.
    if (last && delivery.ending === "reset") res.write(piece, () => res.socket?.destroy());
    else res.write(piece);
  }
  if (delivery.ending === "end") res.end();
  else if (delivery.ending === "reset" && pieces.length === 0) res.socket?.destroy();
  // "stall": nothing more; the client (or server.close) ends it
}

/** The first half (in bytes) of a body. */
export function firstHalf(body: string): Buffer {
  const bytes = Buffer.from(body, "utf8");
  return bytes.subarray(0, Math.floor(bytes.length / 2));
}

/** A buffer cut into pieces of `size` bytes (the last may be shorter). */
export function pieces(bytes: Buffer, size: number): Buffer[] {
  const step = Math.max(1, size);
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += step) out.push(bytes.subarray(i, i + step));
  return out;
}

function gone(res: ServerResponse): boolean {
  return res.destroyed || res.socket === null || res.socket.destroyed;
}

/** Resolves true when the client went away (now or during the wait). */
export function sleepUnlessGone(ms: number, res: ServerResponse): Promise<boolean> {
  if (gone(res)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      res.off("close", onClose);
      resolve(gone(res));
    }, ms);
    res.once("close", onClose);
  });
}

// ---------------------------------------------------------------- small helpers

function messagesOf(body: ChatBody | undefined): Message[] {
  return Array.isArray(body?.messages) ? body.messages.map((m) => (m !== null && typeof m === "object" ? m : {})) : [];
}

function hasToolCalls(m: Message): boolean {
  return Array.isArray(m["tool_calls"]) && m["tool_calls"].length > 0;
}

function parsesAsJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
