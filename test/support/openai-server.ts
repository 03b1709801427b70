/**
 * An OpenAI-compatible Chat Completions server on 127.0.0.1 for tests and
 * benchmarks: scripted replies, SSE streaming with tool-call deltas, and
 * faults (status codes with retry-after, delays, dropped sockets, malformed
 * bodies). Real HTTP, so the real `openai` client is exercised end to end.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

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
  /** Missing fields are estimated (chars / 4). */
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  finish_reason?: string;
  delay_ms?: number;
  /** Streaming only: destroy the socket after this many SSE chunks. */
  drop_after_chunks?: number;
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

export type Reply = MessageReply | FaultReply | DropReply | MalformedReply | RawReply;

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
}

export interface OpenAIServer {
  /** Base URL ending in `/v1`. */
  url: string;
  port: number;
  /** Every request received, in arrival order (chat and others). */
  requests: ReceivedRequest[];
  /** Only the chat completion requests. */
  readonly chatRequests: ReceivedRequest[];
  close(): Promise<void>;
}

/** Starts the server on a random port of 127.0.0.1. */
export async function startOpenAIServer(options: OpenAIServerOptions = {}): Promise<OpenAIServer> {
  const requests: ReceivedRequest[] = [];
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
    if (record.method !== "POST" || path !== "/v1/chat/completions") {
      sendJson(res, 404, { error: { message: `test server: no route ${record.method} ${path}` } });
      return;
    }
    if (record.body === undefined) {
      sendJson(res, 400, { error: { message: "test server: request body is not JSON" } });
      return;
    }

    const index = chatIndex++;
    const reply = options.respond ? await options.respond(record.body, index) : options.replies?.[index];
    if (reply === undefined) {
      sendJson(res, 400, { error: { message: `test server: no reply scripted for chat request #${index}` } });
      return;
    }
    if (reply.delay_ms) {
      const aborted = await sleepUnlessClosed(reply.delay_ms, res);
      if (aborted) return;
    }
    sendReply(res, reply, record.body, index, options.chunk_size ?? 4);
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
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function sendReply(res: ServerResponse, reply: Reply, body: ChatBody, index: number, chunkSize: number): void {
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
  if ("status" in reply) {
    res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers });
    res.end(JSON.stringify({ error: { message: `status ${reply.status}`, type: "server_error", code: null, ...reply.error } }));
    return;
  }
  const message = normalise(reply, index);
  const usage = usageOf(reply, body, message);
  const finishReason = reply.finish_reason ?? (message.tool_calls.length > 0 ? "tool_calls" : "stop");
  const id = `chatcmpl-${index + 1}`;
  const model = typeof body.model === "string" ? body.model : "test-model";

  if (body.stream === true) {
    streamReply(res, { id, model, message, usage, finishReason, chunkSize, body, dropAfter: reply.drop_after_chunks });
    return;
  }
  sendJson(res, 200, {
    id,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: message.content,
          refusal: null,
          ...(message.tool_calls.length > 0
            ? { tool_calls: message.tool_calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } })) }
            : {}),
        },
        finish_reason: finishReason,
        logprobs: null,
      },
    ],
    usage,
  });
}

interface NormalisedMessage {
  content: string | null;
  tool_calls: { id: string; name: string; arguments: string }[];
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

function usageOf(reply: MessageReply, body: ChatBody, message: NormalisedMessage) {
  const promptChars = JSON.stringify(body.messages ?? []).length;
  const completionChars =
    (message.content ?? "").length + message.tool_calls.reduce((n, c) => n + c.name.length + c.arguments.length, 0);
  const prompt_tokens = reply.usage?.prompt_tokens ?? Math.ceil(promptChars / 4);
  const completion_tokens = reply.usage?.completion_tokens ?? Math.ceil(completionChars / 4);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

interface StreamPlan {
  id: string;
  model: string;
  message: NormalisedMessage;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  finishReason: string;
  chunkSize: number;
  body: ChatBody;
  dropAfter: number | undefined;
}

/** SSE the way OpenAI sends it: role, content pieces, tool-call pieces by index, finish, usage, [DONE]. */
function streamReply(res: ServerResponse, plan: StreamPlan): void {
  const created = Math.floor(Date.now() / 1000);
  const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null) => ({
    id: plan.id,
    object: "chat.completion.chunk",
    created,
    model: plan.model,
    choices: [{ index: 0, delta, finish_reason, logprobs: null }],
  });
  const chunks: unknown[] = [chunk({ role: "assistant", content: "" })];
  for (const piece of split(plan.message.content ?? "", plan.chunkSize)) chunks.push(chunk({ content: piece }));
  plan.message.tool_calls.forEach((call, index) => {
    chunks.push(chunk({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.name, arguments: "" } }] }));
    for (const piece of split(call.arguments, plan.chunkSize)) {
      chunks.push(chunk({ tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  chunks.push(chunk({}, plan.finishReason));
  if (plan.body.stream_options?.include_usage === true) {
    chunks.push({ id: plan.id, object: "chat.completion.chunk", created, model: plan.model, choices: [], usage: plan.usage });
  }

  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  chunks.forEach((c, i) => {
    if (plan.dropAfter !== undefined && i >= plan.dropAfter) return;
    res.write(`data: ${JSON.stringify(c)}\n\n`);
  });
  if (plan.dropAfter !== undefined && plan.dropAfter < chunks.length) {
    // Let the written chunks reach the client before the socket dies.
    setTimeout(() => res.socket?.destroy(), 20);
    return;
  }
  res.end("data: [DONE]\n\n");
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

/** Resolves true when the client went away during the wait (an abort), so nothing is written. */
function sleepUnlessClosed(ms: number, res: ServerResponse): Promise<boolean> {
  return new Promise((resolve) => {
    const onClose = () => {
      clearTimeout(timer);
      resolve(true);
    };
    const timer = setTimeout(() => {
      res.off("close", onClose);
      resolve(false);
    }, ms);
    res.once("close", onClose);
  });
}
