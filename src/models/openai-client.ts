/**
 * The `openai`-backed ChatClient: Chat Completions with native tool calling,
 * streaming when asked, the client's own retries, and failures turned into
 * one-line RuntimeErrors that never carry a key.
 */
import OpenAI from "openai";
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from "openai/resources/chat/completions";
import { RuntimeError } from "../errors.js";
import type { Usage } from "../events/types.js";
import type { OpenAIModelConfig } from "../config/types.js";
import type { ChatClient, ChatMessage, ChatRequest, ChatResponse, ToolCallRequest, ToolSpec } from "./types.js";

/** Creates a ChatClient over any OpenAI-compatible endpoint; the key is checked on first use. */
export function createOpenAIChatClient(config: OpenAIModelConfig): ChatClient {
  let client: OpenAI | undefined;
  const apiKey = nonEmpty(config.api_key) ?? nonEmpty(process.env["OPENAI_API_KEY"]);

  const getClient = (): OpenAI => {
    if (apiKey === undefined) {
      throw new RuntimeError(
        "MODEL_UNAVAILABLE",
        `model ${config.model}: no API key: set api_key in the team file or OPENAI_API_KEY`,
      );
    }
    client ??= new OpenAI({
      apiKey,
      // undefined lets the client read OPENAI_BASE_URL itself
      baseURL: nonEmpty(config.base_url),
      timeout: config.timeout_ms,
      maxRetries: config.max_retries,
    });
    return client;
  };

  return {
    model: config.model,
    async chat(request: ChatRequest): Promise<ChatResponse> {
      if (request.signal?.aborted) throw aborted(config.model);
      const openai = getClient();
      // openai-node adds an abort listener to the signal it is given and never
      // removes it; a per-request signal keeps the caller's (a whole run's) clean.
      const link = linkedSignal(request.signal);
      const linked: ChatRequest = { ...request, signal: link.signal };
      try {
        return config.stream ? await streamChat(openai, config, linked) : await plainChat(openai, config, linked);
      } catch (err) {
        throw toRuntimeError(err, config, openai.baseURL, apiKey, request.signal);
      } finally {
        link.release();
      }
    },
  };
}

/** A signal that aborts with `parent`, detached again by `release`. */
function linkedSignal(parent: AbortSignal | undefined): { signal: AbortSignal; release(): void } {
  const controller = new AbortController();
  if (!parent) return { signal: controller.signal, release() {} };
  const onAbort = () => controller.abort(parent.reason);
  parent.addEventListener("abort", onAbort, { once: true });
  return { signal: controller.signal, release: () => parent.removeEventListener("abort", onAbort) };
}

function baseParams(config: OpenAIModelConfig, request: ChatRequest): ChatCompletionCreateParamsNonStreaming {
  const params: ChatCompletionCreateParamsNonStreaming = {
    model: config.model,
    messages: request.messages.map(toWireMessage),
  };
  if (request.tools && request.tools.length > 0) params.tools = request.tools.map(toWireTool);
  if (config.temperature !== undefined) params.temperature = config.temperature;
  if (config.max_tokens !== undefined) params.max_tokens = config.max_tokens;
  return params;
}

async function plainChat(openai: OpenAI, config: OpenAIModelConfig, request: ChatRequest): Promise<ChatResponse> {
  const { data, request_id } = await openai.chat.completions
    .create(baseParams(config, request), { signal: request.signal })
    .withResponse();
  if (typeof data !== "object" || data === null) {
    // A web page or a proxy answering 200: not an OpenAI-compatible endpoint at this URL.
    throw badReply(config.model, "the reply is not a chat completion", request_id, `is base_url right? (${displayURL(openai.baseURL)})`);
  }
  const choice = data.choices?.[0];
  if (!choice) throw badReply(config.model, "the reply has no choices", request_id);
  const toolCalls: ToolCallRequest[] = [];
  for (const call of choice.message.tool_calls ?? []) {
    if (call.type === "function") {
      toolCalls.push({ id: call.id, name: call.function.name, arguments: call.function.arguments });
    }
  }
  return {
    content: choice.message.content ?? null,
    tool_calls: toolCalls,
    usage: toUsage(data.usage),
    finish_reason: choice.finish_reason ?? "stop",
    ...(request_id ? { request_id } : {}),
  };
}

async function streamChat(openai: OpenAI, config: OpenAIModelConfig, request: ChatRequest): Promise<ChatResponse> {
  const { data: stream, request_id } = await openai.chat.completions
    .create(
      { ...baseParams(config, request), stream: true, stream_options: { include_usage: true } },
      { signal: request.signal },
    )
    .withResponse();
  const acc: StreamState = { content: "", sawContent: false, finishReason: "stop", usage: toUsage(undefined), calls: [] };
  try {
    for await (const chunk of stream) {
      if (request.signal?.aborted) break;
      absorbChunk(acc, chunk, request.onDelta);
    }
  } catch (err) {
    if (err instanceof OpenAI.APIError || request.signal?.aborted) throw err;
    // undici reports a dropped body as a bare "terminated"; say what it means
    const why = oneLine(String((err as Error)?.message ?? err));
    const id = request_id ? ` (request id ${request_id})` : "";
    throw new RuntimeError("MODEL_UNAVAILABLE", `model ${config.model}: the reply stream broke off (${why})${id}`);
  }
  // The client's stream ends quietly on abort instead of throwing.
  if (request.signal?.aborted) throw aborted(config.model);
  const toolCalls = acc.calls.filter((c) => c !== undefined);
  for (const [i, call] of toolCalls.entries()) call.id ||= `call_${i + 1}`;
  return {
    content: acc.sawContent ? acc.content : null,
    tool_calls: toolCalls,
    usage: acc.usage,
    finish_reason: acc.finishReason,
    ...(request_id ? { request_id } : {}),
  };
}

interface StreamState {
  content: string;
  sawContent: boolean;
  finishReason: string;
  usage: Usage;
  calls: ToolCallRequest[];
}

function absorbChunk(acc: StreamState, chunk: ChatCompletionChunk, onDelta: ((text: string) => void) | undefined): void {
  if (chunk.usage) acc.usage = toUsage(chunk.usage);
  const choice = chunk.choices?.[0];
  if (!choice) return;
  const text = choice.delta?.content;
  if (text) {
    acc.sawContent = true;
    acc.content += text;
    onDelta?.(text);
  }
  for (const delta of choice.delta?.tool_calls ?? []) accumulateToolCall(acc.calls, delta);
  if (choice.finish_reason) acc.finishReason = choice.finish_reason;
}

type ToolCallDelta = NonNullable<ChatCompletionChunk.Choice.Delta["tool_calls"]>[number];

/** Deltas arrive keyed by `index`: the first carries id and name, later ones pieces of the arguments. */
function accumulateToolCall(calls: ToolCallRequest[], delta: ToolCallDelta): void {
  const slot = (calls[delta.index] ??= { id: "", name: "", arguments: "" });
  if (delta.id) slot.id = delta.id;
  if (delta.function?.name) slot.name += delta.function.name;
  if (delta.function?.arguments) slot.arguments += delta.function.arguments;
}

function toWireMessage(message: ChatMessage): ChatCompletionMessageParam {
  if (message.role === "assistant" && message.tool_calls && message.tool_calls.length > 0) {
    return {
      role: "assistant",
      content: message.content,
      tool_calls: message.tool_calls.map((c) => ({
        id: c.id,
        type: "function" as const,
        function: { name: c.name, arguments: c.arguments },
      })),
    };
  }
  if (message.role === "assistant") return { role: "assistant", content: message.content };
  return message;
}

function toWireTool(tool: ToolSpec): ChatCompletionTool {
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}

function toUsage(usage: { prompt_tokens?: number; completion_tokens?: number; total_tokens?: number } | null | undefined): Usage {
  const prompt_tokens = usage?.prompt_tokens ?? 0;
  const completion_tokens = usage?.completion_tokens ?? 0;
  return { prompt_tokens, completion_tokens, total_tokens: usage?.total_tokens ?? prompt_tokens + completion_tokens };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}

function aborted(model: string): RuntimeError {
  return new RuntimeError("ABORTED", `model ${model}: request aborted`);
}

function badReply(model: string, what: string, requestId: string | null | undefined, hint?: string): RuntimeError {
  return new RuntimeError("MODEL_BAD_REPLY", `model ${model}: ${what}${requestId ? ` (request id ${requestId})` : ""}${hint ? `; ${hint}` : ""}`);
}

/** Maps whatever the client threw to a one-line RuntimeError; the cause is dropped so no header can leak. */
function toRuntimeError(
  err: unknown,
  config: OpenAIModelConfig,
  baseURL: string,
  apiKey: string | undefined,
  signal: AbortSignal | undefined,
): RuntimeError {
  if (err instanceof RuntimeError) return err;
  const model = config.model;
  baseURL = displayURL(baseURL);
  if (err instanceof OpenAI.APIUserAbortError || signal?.aborted) return aborted(model);
  const attempts = config.max_retries + 1;
  const tries = attempts === 1 ? "1 attempt" : `${attempts} attempts`;
  if (err instanceof OpenAI.APIConnectionTimeoutError) {
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: no response within ${config.timeout_ms} ms from ${baseURL} after ${tries}`);
  }
  if (err instanceof OpenAI.APIConnectionError) {
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: connection failed to ${baseURL} after ${tries}`);
  }
  if (err instanceof OpenAI.APIError) {
    // the client already prefixes the status: "500 Internal error"
    const text = oneLine(redact(err.message, apiKey));
    const retried = err.status !== undefined && (err.status === 429 || err.status >= 500) && attempts > 1;
    const details = [err.requestID ? `request id ${err.requestID}` : "", retried ? `after ${tries}` : ""].filter(Boolean);
    // A 404 without an OpenAI-style error body is a wrong URL, not a missing model.
    const apiBody = typeof err.error === "object" && err.error !== null && "message" in err.error;
    const hint = err.status === 404 && !apiBody ? `; is base_url right? ${baseURL}/chat/completions was not found` : "";
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: ${text}${details.length ? ` (${details.join(", ")})` : ""}${hint}`);
  }
  if (err instanceof SyntaxError) return badReply(model, "the reply is not valid JSON", undefined);
  return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: ${oneLine(redact(String((err as Error)?.message ?? err), apiKey))}`);
}

/** A base URL fit for a message: without user:password@, query string or fragment, where keys sometimes hide. */
function displayURL(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return url.replace(/\/\/[^/@]*@/, "//").replace(/[?#].*$/, "");
  }
}

/** Providers echo parts of a rejected key back ("Incorrect API key provided: sk-ab***"); keep none of it. */
function redact(text: string, apiKey: string | undefined): string {
  let out = apiKey ? text.split(apiKey).join("***") : text;
  out = out.replace(/\b(sk|key|pk)-[A-Za-z0-9_*\-]{3,}/g, "$1-***");
  return out.replace(/Bearer\s+\S+/gi, "Bearer ***");
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}
