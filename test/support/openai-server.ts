/**
 * An OpenAI-compatible Chat Completions server on 127.0.0.1 for tests and
 * benchmarks: scripted replies, SSE streaming with tool-call deltas, and
 * faults (status codes with retry-after, delays, dropped sockets, malformed
 * bodies, stalls, drips, resets, HTML pages, empty streams). Real HTTP, so the
 * real `openai` client is exercised end to end. `dialect` gives it the habits
 * of real servers and `strict` makes it refuse what they refuse
 * (openai-server-dialects.ts).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type Delivery,
  type Dialect,
  type PlainToolCall,
  type Refusal,
  type RenderedMessage,
  deliver,
  dialectRefusal,
  firstHalf,
  messageToolCall,
  pieces,
  renderMessage,
  sleepUnlessGone,
  streamToolCallStart,
  strictProblems,
  thinkingPart,
  usageForDialect,
} from "./openai-server-dialects.js";

import { anthropicEvents, anthropicMessage, anthropicProblems, chatBodyOfAnthropic, forgedThinking, PromptCache } from "./openai-server-anthropic.js";
import { chatBodyOf, finalStatus, outputItems, type ResponsePlan, responseEvents, responseObject, responsesProblems } from "./openai-server-responses.js";

export { roleSequence, strictProblems, type Dialect } from "./openai-server-dialects.js";

/** A tool call the server answers with; object arguments are JSON-encoded, strings sent verbatim. */
export interface ReplyToolCall {
  id?: string;
  name: string;
  arguments: string | Record<string, unknown>;
}

/** A normal assistant reply. */
export interface MessageReply {
  content?: string | null;
  tool_calls?: ReplyToolCall[];
  /**
   * Missing counts are estimated (chars / 4); cached and reasoning tokens, when given, are
   * reported as OpenAI does (`prompt_tokens_details.cached_tokens`, `completion_tokens_details.reasoning_tokens`).
   */
  usage?: { prompt_tokens?: number; completion_tokens?: number; cached_tokens?: number; reasoning_tokens?: number };
  finish_reason?: string;
  delay_ms?: number;
  /** Streaming only: destroy the socket after this many SSE chunks. */
  drop_after_chunks?: number;
  /** The model's thinking, rendered as `dialect.reasoning` says (`<think>` tags before the content by default). */
  reasoning?: string;
  /**
   * Streamed: write this many SSE events (`data: [DONE]` counts as one) and then nothing, never
   * ending, until the client closes. Non-streamed: headers and the first half of the body, then nothing.
   */
  stall_after_chunks?: number;
  /** Streamed: wait this long between SSE chunks. Non-streamed: the body in ~10 pieces this far apart. */
  drip_ms?: number;
  /**
   * Non-streamed: headers (content-length of the full body) and half the body, then the socket is
   * destroyed. Streamed: the first half of the stream's bytes, then the same.
   */
  reset_mid_body?: boolean;
}

/** An HTTP error reply, e.g. `{status: 429, headers: {"retry-after": "0"}}`. */
export interface FaultReply {
  status: number;
  headers?: Record<string, string>;
  error?: { message: string; type?: string; code?: string };
  delay_ms?: number;
}

/** Destroy the socket without answering. */
export interface DropReply {
  drop: true;
  delay_ms?: number;
}

/** A 200 whose body is not JSON. */
export interface MalformedReply {
  malformed: true;
  delay_ms?: number;
}

/** A body sent verbatim. */
export interface RawReply {
  raw: string;
  status?: number;
  content_type?: string;
  delay_ms?: number;
}

/** An nginx welcome page (a proxy, or a wrong base URL) with `text/html`, whatever `stream` says. */
export interface HtmlReply {
  html: true;
  /** @default 200 */
  status?: number;
  delay_ms?: number;
}

/**
 * A 200 without choices: streamed, 3 chunks whose `choices` is `[]` then `data: [DONE]`;
 * non-streamed, a chat.completion with `choices: []`.
 */
export interface EmptyStreamReply {
  empty_stream: true;
  delay_ms?: number;
}

export type Reply = MessageReply | FaultReply | DropReply | MalformedReply | RawReply | HtmlReply | EmptyStreamReply;

/** The JSON body of a chat completion request, as received. */
export type ChatBody = Record<string, unknown> & {
  model?: string;
  messages?: Array<Record<string, unknown>>;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  tools?: unknown[];
};

export interface ReceivedRequest {
  method: string;
  path: string;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** Parsed JSON body (undefined for GET or an unparsable body). */
  body: ChatBody | undefined;
  /** Epoch milliseconds at arrival. */
  time: number;
  /** The x-request-id the server answered with. */
  request_id: string;
}

export interface OpenAIServerOptions {
  /** Consumed in order, one per chat completion request. */
  replies?: Reply[];
  /** Dynamic replies; takes precedence over `replies`. `index` counts chat requests from 0. */
  respond?: (body: ChatBody, index: number) => Reply | Promise<Reply>;
  /** When set, requests without `Authorization: Bearer <apiKey>` get a 401. */
  apiKey?: string;
  /** Characters per streamed content / arguments delta. @default 4 */
  chunk_size?: number;
  /** Model ids listed by GET /v1/models. @default ["test-model"] */
  models?: string[];
  /**
   * Server-wide habits of a real server: reasoning rendering, role rules, tool-call and usage
   * quirks. Requests its rules refuse are recorded but consume no reply (`respond` is not called).
   */
  dialect?: Dialect;
  /**
   * Answer 400 (the first of `strictProblems(body)`) to any chat request OpenAI, DeepSeek or vLLM
   * would refuse, checked before anything else. Refused requests are recorded but consume no reply.
   */
  strict?: boolean;
}

export interface OpenAIServer {
  /** Base URL ending in `/v1`. */
  url: string;
  port: number;
  /** Every request received, in arrival order (chat and others). */
  requests: ReceivedRequest[];
  /** Only the chat completion requests. */
  readonly chatRequests: ReceivedRequest[];
  /** Only the Responses API requests (their bodies as sent; `respond` saw each as a chat body, `chatBodyOf`). */
  readonly responsesRequests: ReceivedRequest[];
  /** Only the Anthropic Messages API requests (their bodies as sent; `respond` saw each as a chat body, `chatBodyOfAnthropic`). */
  readonly anthropicRequests: ReceivedRequest[];
  /** The body of each Anthropic reply's usage, in order (openai-server-anthropic.ts keeps the prompt cache). */
  readonly anthropicUsage: Array<Record<string, number>>;
  close(): Promise<void>;
}

/** Starts the server on a random port of 127.0.0.1. */
export async function startOpenAIServer(options: OpenAIServerOptions = {}): Promise<OpenAIServer> {
  const requests: ReceivedRequest[] = [];
  /** The encrypted content of every reasoning item sent, which the Responses API takes back. */
  const issued = new Set<string>();
  const cache = new PromptCache();
  const anthropicUsage: Array<Record<string, number>> = [];
  let chatIndex = 0;
  let requestCounter = 0;

  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: `test server: ${String(err)}` } });
      else res.destroy();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const text = await readBody(req);
    const requestId = `req_${++requestCounter}`;
    const path = (req.url ?? "/").split("?")[0] ?? "/";
    const record: ReceivedRequest = {
      method: req.method ?? "GET",
      path,
      headers: flattenHeaders(req.headers),
      body: parseJson(text),
      time: Date.now(),
      request_id: requestId,
    };
    requests.push(record);
    res.setHeader("x-request-id", requestId);

    if (options.apiKey !== undefined && record.headers["authorization"] !== `Bearer ${options.apiKey}`) {
      sendJson(res, 401, { error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } });
      return;
    }
    if (record.method === "GET" && path === "/v1/models") {
      const ids = options.models ?? ["test-model"];
      sendJson(res, 200, { object: "list", data: ids.map((id) => ({ id, object: "model", created: 0, owned_by: "test" })) });
      return;
    }
    const responses = path === "/v1/responses";
    const anthropic = path === "/v1/messages";
    if (record.method !== "POST" || (path !== "/v1/chat/completions" && !responses && !anthropic)) {
      sendJson(res, 404, { error: { message: `test server: no route ${record.method} ${path}` } });
      return;
    }
    if (record.body === undefined) {
      sendJson(res, 400, { error: { message: "test server: request body is not JSON" } });
      return;
    }

    if (anthropic) {
      // What Anthropic always refuses, strict or not.
      const problem = anthropicProblems(record.body)[0] ?? forgedThinking(record.body);
      if (problem !== undefined) {
        sendJson(res, 400, { type: "error", error: { type: "invalid_request_error", message: problem } });
        return;
      }
    }
    // A Responses or Anthropic request is answered from the same replies, read as the chat request it amounts to.
    const body = responses ? chatBodyOf(record.body) : anthropic ? chatBodyOfAnthropic(record.body) : record.body;
    const refusal = (responses ? responsesRefusal(options, record.body, issued) : undefined) ?? refusalFor(options, body);
    if (refusal !== undefined) {
      sendJson(res, refusal.status, refusal.body);
      return;
    }

    const index = chatIndex++;
    const reply = options.respond ? await options.respond(body, index) : options.replies?.[index];
    if (reply === undefined) {
      sendJson(res, 400, { error: { message: `test server: no reply scripted for chat request #${index}` } });
      return;
    }
    if (reply.delay_ms) {
      const aborted = await sleepUnlessGone(reply.delay_ms, res);
      if (aborted) return;
    }
    const ctx = { chunkSize: options.chunk_size ?? 4, dialect: options.dialect };
    if (responses && isMessage(reply)) await sendResponse(res, reply, body, index, ctx, issued);
    else if (anthropic && isMessage(reply)) {
      const usage = cache.usage(record.body);
      anthropicUsage.push(usage);
      await sendAnthropic(res, reply, body, index, ctx, usage);
    } else await sendReply(res, reply, body, index, ctx);
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    get chatRequests() {
      return requests.filter((r) => r.path === "/v1/chat/completions");
    },
    get responsesRequests() {
      return requests.filter((r) => r.path === "/v1/responses");
    },
    get anthropicRequests() {
      return requests.filter((r) => r.path === "/v1/messages");
    },
    anthropicUsage,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The 400 a strict server or the dialect answers this request with, if any. */
function refusalFor(options: OpenAIServerOptions, body: ChatBody): Refusal | undefined {
  if (options.strict) {
    const [problem] = strictProblems(body);
    if (problem !== undefined) {
      return { status: 400, body: { error: { message: problem, type: "invalid_request_error", param: "messages", code: null } } };
    }
  }
  return dialectRefusal(options.dialect, body);
}

/** The 400 a strict server answers a Responses request with, if any (openai-server-responses.ts). */
function responsesRefusal(options: OpenAIServerOptions, body: ChatBody, issued: ReadonlySet<string>): Refusal | undefined {
  if (!options.strict) return undefined;
  const [problem] = responsesProblems(body, issued);
  if (problem === undefined) return undefined;
  return { status: 400, body: { error: { message: problem, type: "invalid_request_error", param: null, code: null } } };
}

function isMessage(reply: Reply): reply is MessageReply {
  return !("status" in reply || "drop" in reply || "malformed" in reply || "raw" in reply || "html" in reply || "empty_stream" in reply);
}

/** A reply on the Responses API: the response object, or its events, with the reply's faults. */
function sendResponse(res: ServerResponse, reply: MessageReply, body: ChatBody, index: number, ctx: ReplyContext, issued: Set<string>): void | Promise<void> {
  const plain = normalise(reply, index);
  // The tool-call habits of the dialect apply; reasoning is always a reasoning item here.
  const message = renderMessage(plain.content, plain.tool_calls, undefined, ctx.dialect);
  const usage = usageForDialect(usageOf(reply, body, message), ctx.dialect);
  const plan: ResponsePlan = {
    id: String(index + 1),
    model: modelOf(body),
    content: message.content,
    tool_calls: message.tool_calls,
    ...(reply.reasoning !== undefined ? { reasoning: reply.reasoning } : {}),
    finish_reason: reply.finish_reason ?? message.finish_reason,
    usage: usage?.completion_tokens === undefined ? undefined : (usage as ResponsePlan["usage"]),
  };
  const items = outputItems(plan);
  for (const item of items) if (typeof item["encrypted_content"] === "string") issued.add(item["encrypted_content"]);
  if (body.stream === true) return streamEvents(res, responseEvents(plan, ctx.chunkSize), [], reply);
  const value = responseObject(plan, finalStatus(plan), items);
  if (reply.drip_ms || reply.stall_after_chunks !== undefined || reply.reset_mid_body) return sendJsonFaulty(res, value, reply);
  sendJson(res, 200, value);
}

/** A reply on Anthropic's Messages API: the message, or its events, with the reply's faults; the prompt counted by the cache. */
function sendAnthropic(
  res: ServerResponse,
  reply: MessageReply,
  body: ChatBody,
  index: number,
  ctx: ReplyContext,
  prompt: { input_tokens: number; cache_read_input_tokens: number; cache_creation_input_tokens: number },
): void | Promise<void> {
  const plain = normalise(reply, index);
  const output = usageOf(reply, body, renderMessage(plain.content, plain.tool_calls, undefined, undefined)).completion_tokens;
  const stop = { tool_calls: "tool_use", length: "max_tokens", stop: "end_turn" }[reply.finish_reason ?? ""];
  const plan = {
    id: `msg_${index + 1}`,
    model: modelOf(body),
    content: plain.content,
    tool_calls: plain.tool_calls,
    ...(reply.reasoning !== undefined ? { reasoning: reply.reasoning } : {}),
    stop_reason: stop ?? (plain.tool_calls.length ? "tool_use" : "end_turn"),
    usage: { ...prompt, output_tokens: reply.usage?.completion_tokens ?? output },
  };
  if (body.stream === true) return streamEvents(res, anthropicEvents(plan, ctx.chunkSize), [], reply);
  const value = anthropicMessage(plan);
  if (reply.drip_ms || reply.stall_after_chunks !== undefined || reply.reset_mid_body) return sendJsonFaulty(res, value, reply);
  sendJson(res, 200, value);
}

interface ReplyContext {
  chunkSize: number;
  dialect: Dialect | undefined;
}

function sendReply(res: ServerResponse, reply: Reply, body: ChatBody, index: number, ctx: ReplyContext): void | Promise<void> {
  if ("drop" in reply) {
    res.socket?.destroy();
    return;
  }
  if ("malformed" in reply) {
    res.writeHead(200, { "content-type": "application/json" });
    res.end('{"id": "chatcmpl-broken", "choices": [ {"message": ');
    return;
  }
  if ("raw" in reply) {
    res.writeHead(reply.status ?? 200, { "content-type": reply.content_type ?? "application/json" });
    res.end(reply.raw);
    return;
  }
  if ("html" in reply) {
    res.writeHead(reply.status ?? 200, { "content-type": "text/html" });
    res.end(NGINX_PAGE);
    return;
  }
  if ("empty_stream" in reply) {
    sendEmpty(res, body, index);
    return;
  }
  if ("status" in reply) {
    res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
    res.end(JSON.stringify({ error: { message: `status ${reply.status}`, type: "server_error", code: null, ...reply.error } }));
    return;
  }
  const plain = normalise(reply, index);
  const message = renderMessage(plain.content, plain.tool_calls, reply.reasoning, ctx.dialect);
  const usage = usageForDialect(usageOf(reply, body, message), ctx.dialect);
  const finishReason = reply.finish_reason ?? message.finish_reason;
  const id = `chatcmpl-${index + 1}`;
  const model = modelOf(body);

  if (body.stream === true) {
    return streamReply(res, { id, model, message, usage, finishReason, body, reply, ...ctx });
  }
  const completion = {
    id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          ...contentFields(message),
          refusal: null,
          ...(message.tool_calls.length > 0 ? { tool_calls: message.tool_calls.map((c) => messageToolCall(c, ctx.dialect)) } : {}),
        },
        finish_reason: finishReason,
        logprobs: null,
      },
    ],
    ...(usage ? { usage } : {}),
  };
  if (reply.drip_ms || reply.stall_after_chunks !== undefined || reply.reset_mid_body) return sendJsonFaulty(res, completion, reply);
  sendJson(res, 200, completion);
}

/** `content` and the reasoning field of a non-streamed message, as the dialect renders them. */
function contentFields({ content, reasoning }: RenderedMessage): Record<string, unknown> {
  if (reasoning?.field !== "thinking_parts") return { content, ...(reasoning ? { [reasoning.field]: reasoning.text } : {}) };
  return { content: [thinkingPart(reasoning.text), ...(content ? [{ type: "text", text: content }] : [])] };
}

const NGINX_PAGE = "<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>";

function modelOf(body: ChatBody): string {
  return typeof body.model === "string" ? body.model : "test-model";
}

/** A 200 with `choices: []`: three such chunks and [DONE] when streamed, one chat.completion otherwise. */
function sendEmpty(res: ServerResponse, body: ChatBody, index: number): void {
  const base = { id: `chatcmpl-${index + 1}`, created: Math.floor(Date.now() / 1000), model: modelOf(body), choices: [] };
  if (body.stream !== true) {
    sendJson(res, 200, { ...base, object: "chat.completion" });
    return;
  }
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  for (let i = 0; i < 3; i++) res.write(sse({ ...base, object: "chat.completion.chunk" }));
  res.end(DONE);
}

/** A JSON 200 with a full content-length, delivered dripping, stalling half way, or reset half way. */
function sendJsonFaulty(res: ServerResponse, value: unknown, reply: MessageReply): Promise<void> {
  const text = JSON.stringify(value);
  const bytes = Buffer.from(text, "utf8");
  const cut = reply.stall_after_chunks !== undefined || reply.reset_mid_body ? firstHalf(text) : bytes;
  const ending: Delivery["ending"] = reply.stall_after_chunks !== undefined ? "stall" : reply.reset_mid_body ? "reset" : "end";
  res.writeHead(200, { "content-type": "application/json", "content-length": String(bytes.length) });
  const size = reply.drip_ms ? Math.ceil(bytes.length / 10) : cut.length;
  return deliver(res, pieces(cut, size), { drip_ms: reply.drip_ms, ending });
}

interface NormalisedMessage {
  content: string | null;
  tool_calls: PlainToolCall[];
}

function normalise(reply: MessageReply, index: number): NormalisedMessage {
  return {
    content: reply.content ?? null,
    tool_calls: (reply.tool_calls ?? []).map((c, i) => ({
      id: c.id ?? `call_${index + 1}_${i + 1}`,
      name: c.name,
      arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments),
    })),
  };
}

function usageOf(reply: MessageReply, body: ChatBody, message: RenderedMessage) {
  const promptChars = JSON.stringify(body.messages ?? []).length;
  const completionChars =
    (message.content ?? "").length + (message.reasoning?.text.length ?? 0) + message.tool_calls.reduce((n, c) => n + c.name.length + c.arguments.length, 0);
  const prompt_tokens = reply.usage?.prompt_tokens ?? Math.ceil(promptChars / 4);
  const completion_tokens = reply.usage?.completion_tokens ?? Math.ceil(completionChars / 4);
  const { cached_tokens, reasoning_tokens } = reply.usage ?? {};
  return {
    prompt_tokens,
    completion_tokens,
    total_tokens: prompt_tokens + completion_tokens,
    ...(cached_tokens !== undefined ? { prompt_tokens_details: { cached_tokens, audio_tokens: 0 } } : {}),
    ...(reasoning_tokens !== undefined ? { completion_tokens_details: { reasoning_tokens, audio_tokens: 0 } } : {}),
  };
}

interface StreamPlan extends ReplyContext {
  id: string;
  model: string;
  message: RenderedMessage;
  usage: Record<string, unknown> | undefined;
  finishReason: string;
  body: ChatBody;
  reply: MessageReply;
}

/**
 * SSE the way OpenAI sends it: role, reasoning pieces (reasoning field dialects), content pieces,
 * tool-call pieces by index, finish, usage, [DONE].
 */
function streamChunks(plan: StreamPlan): unknown[] {
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) => ({
    id: plan.id,
    object: "chat.completion.chunk",
    created,
    model: plan.model,
    choices: [{ index: 0, delta, finish_reason, logprobs: null }],
  });
  const { message, chunkSize } = plan;
  const chunks: unknown[] = [chunk({ role: "assistant", content: message.reasoning ? null : "" })];
  const parts = message.reasoning?.field === "thinking_parts";
  if (message.reasoning) {
    for (const piece of split(message.reasoning.text, chunkSize)) {
      chunks.push(chunk(parts ? { content: [thinkingPart(piece)] } : { [message.reasoning.field]: piece }));
    }
  }
  split(message.content ?? "", chunkSize).forEach((piece, i) => {
    chunks.push(chunk({ content: parts && i === 0 ? [{ type: "text", text: piece }] : piece }));
  });
  message.tool_calls.forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [streamToolCallStart(call, index, plan.dialect)] }));
    for (const piece of split(call.arguments, chunkSize)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, plan.finishReason));
  if (plan.body.stream_options?.include_usage === true && plan.usage !== undefined) {
    chunks.push({ id: plan.id, object: "chat.completion.chunk", created, model: plan.model, choices: [], usage: plan.usage });
  }
  return chunks;
}

/** Writes a chat completion stream, its chunks then `[DONE]`, with the reply's faults. */
function streamReply(res: ServerResponse, plan: StreamPlan): Promise<void> {
  return streamEvents(res, streamChunks(plan).map(sse), [DONE], plan.reply);
}

/**
 * Writes SSE events (then `trailer`), with the reply's faults: dropped, stalled or reset part
 * way, or dripping. `drop_after_chunks` counts `events`, `stall_after_chunks` the trailer too.
 */
async function streamEvents(res: ServerResponse, chunks: string[], trailer: string[], reply: MessageReply): Promise<void> {
  const { drop_after_chunks: dropAfter, stall_after_chunks: stallAfter, drip_ms } = reply;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  if (dropAfter !== undefined && dropAfter < chunks.length) {
    await deliver(res, chunks.slice(0, dropAfter), { drip_ms, ending: "stall" });
    // Let the written chunks reach the client before the socket dies.
    setTimeout(() => res.socket?.destroy(), 20);
    return;
  }
  const events = [...chunks, ...trailer];
  if (stallAfter !== undefined) return deliver(res, events.slice(0, stallAfter), { drip_ms, ending: "stall" });
  if (reply.reset_mid_body) {
    const half = firstHalf(events.join(""));
    return deliver(res, drip_ms ? pieces(half, Math.ceil(half.length / 5)) : [half], { drip_ms, ending: "reset" });
  }
  return deliver(res, events, { drip_ms, ending: "end" });
}

const DONE = "data: [DONE]\n\n";

function sse(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

function split(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on("data", (d: Buffer) => parts.push(d));
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")));
    req.on("error", reject);
  });
}

function parseJson(text: string): ChatBody | undefined {
  if (text === "") return undefined;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" ? (value as ChatBody) : undefined;
  } catch {
    return undefined;
  }
}

function flattenHeaders(headers: IncomingMessage["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(", ") : v;
  return out;
}
