/**
 * The `openai`-backed ChatClient: Chat Completions with native tool calling,
 * or the Responses API with `api: responses` (`openai-responses.ts`, the same
 * loop below), streaming when asked, and the field's habits handled
 * (docs/model-servers.md):
 *
 * - one deadline, `timeout_ms`, over the whole call: connecting, waiting,
 *   reading the body or stream (a stall or a drip included) and the retries;
 *   streams also fail after `idle_timeout_ms` without a chunk;
 * - retries of its own (the client's are off): connection errors, 408, 409,
 *   429 and 5xx, backing off, obeying `retry-after` up to `max_retry_wait_ms`
 *   and failing at once past it;
 * - a chat template's refusal of the roles switches the layout
 *   (`dialect.ts`), said once through `onNotice`, remembered per endpoint;
 * - failures are one-line RuntimeErrors that never carry a key;
 * - HTTP goes through undici's `fetch` on one dispatcher per process
 *   (`model-fetch.ts`, docs/model-servers.md#the-transport).
 */
import OpenAI from "openai";
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam, ChatCompletionTool } from "openai/resources/chat/completions";
import { RuntimeError } from "../errors.js";
import type { OpenAIModelConfig } from "../config/types.js";
import { layOut, layoutFromRefusal, maxTokensParam, type RoleLayout } from "./dialect.js";
import { describeFailure, displayURL, StreamBroke } from "./openai-errors.js";
import type { CallControl } from "./call-control.js";
import { callWithRetries, nonEmpty } from "./call-retries.js";
import { readCompletion, StreamReader } from "./openai-reply.js";
import { readResponse, ResponsesStreamReader, responsesBody } from "./openai-responses.js";
import { modelFetch } from "./model-fetch.js";
import { strictSchema } from "./strict-schema.js";
import type { ChatClient, ChatMessage, ChatRequest, ChatResponse, ToolSpec } from "./types.js";

/** Layouts learnt from servers' refusals, per endpoint and model, for the life of the process. */
const learnt = new Map<string, RoleLayout>();
/** Endpoints (and models) that refused `response_format`, for the life of the process. */
const noStructuredOutput = new Set<string>();

/** Creates a ChatClient over any OpenAI-compatible endpoint; the key is checked on first use. */
export function createOpenAIChatClient(config: OpenAIModelConfig): ChatClient {
  let client: OpenAI | undefined;
  const apiKey = nonEmpty(config.api_key) ?? nonEmpty(process.env["OPENAI_API_KEY"]);

  const getClient = (): OpenAI => {
    if (apiKey === undefined) {
      throw new RuntimeError("MODEL_UNAVAILABLE", `model ${config.model}: no API key: set api_key in the team file or OPENAI_API_KEY`);
    }
    client ??= sharedClient(config, apiKey);
    return client;
  };

  return {
    model: config.model,
    async chat(request: ChatRequest): Promise<ChatResponse> {
      const openai = request.signal?.aborted ? undefined : getClient();
      const baseURL = openai?.baseURL ?? "";
      return callWithRetries({ config, baseURL, apiKey, signal: request.signal }, (_n, control) =>
        adapting({ openai: openai as OpenAI, config, request, endpoint: `${baseURL} ${config.model}`, apiKey }, control),
      );
    },
  };
}

/**
 * One try of a call (`attempt`, from 0), made again at once, with no pause,
 * when the server refuses the layout of the roles or `response_format`:
 * the next layout, or format instructions alone, said once through `onNotice`.
 */
async function adapting(call: OneCall, control: CallControl): Promise<ChatResponse> {
  const { openai, config, request, endpoint, apiKey } = call;
  for (;;) {
    const layout: RoleLayout = config.roles ?? learnt.get(endpoint) ?? "as_is";
    const structured = config.structured_output && !noStructuredOutput.has(endpoint);
    try {
      return await once(openai, config, structured ? request : withoutFormat(request), layout, control);
    } catch (err) {
      if (request.signal?.aborted || control.expired) throw err;
      const refused = err instanceof OpenAI.APIError && err.status === 400 ? layoutFromRefusal(err.message) : undefined;
      if (refused && refused !== layout && !(refused === "alternate" && layout === "no_system") && config.roles === undefined) {
        // Calls in flight when the first refusal came are refused too: the switch is said once.
        const known = learnt.get(endpoint);
        if (known !== refused && known !== "no_system") {
          learnt.set(endpoint, refused);
          request.onNotice?.({ notice: "layout", message: layoutNotice(config.model, refused) });
        }
        continue;
      }
      if (structured && request.response_format && isFormatRefusal(err)) {
        if (noStructuredOutput.has(endpoint)) continue;
        noStructuredOutput.add(endpoint);
        const why = describeFailure(err, config, openai.baseURL, apiKey, 1).message.replace(`model ${config.model}: `, "");
        const message = `model ${config.model}: the server refused response_format (${why}); answers are asked for with format instructions alone from now on (unset structured_output to start so)`;
        request.onNotice?.({ notice: "structured_output", message });
        continue;
      }
      throw err;
    }
  }
}

/** What every try of one call shares. */
interface OneCall {
  openai: OpenAI;
  config: OpenAIModelConfig;
  request: ChatRequest;
  /** The base URL and model: the key of what is learnt of a server. */
  endpoint: string;
  apiKey: string | undefined;
}

/**
 * The `openai` client of a model, one per process: it holds no state of a
 * call, and made per run it was ~4 KB of every waiting run (its 30-odd
 * resource objects; docs/performance.md#runs-waiting-on-a-slow-model). Made
 * anew when the key or the environment's base URL it was made with changed.
 */
const clients = new WeakMap<OpenAIModelConfig, { apiKey: string; envBase: string | undefined; client: OpenAI }>();
function sharedClient(config: OpenAIModelConfig, apiKey: string): OpenAI {
  const known = clients.get(config);
  const envBase = process.env["OPENAI_BASE_URL"];
  if (known?.apiKey === apiKey && known.envBase === envBase) return known.client;
  const client = new OpenAI({
    apiKey,
    // undefined lets the client read OPENAI_BASE_URL itself
    baseURL: nonEmpty(config.base_url),
    timeout: config.timeout_ms,
    maxRetries: 0,
    fetch: nestErrorBodies(modelFetch),
    ...(Object.keys(config.headers).length ? { defaultHeaders: config.headers } : {}),
  });
  clients.set(config, { apiKey, envBase, client });
  return client;
}

/**
 * vLLM (older), SGLang and TensorRT-LLM answer errors as `{"object": "error",
 * "message": ...}`, without the nested `error` the openai client reads its
 * message from; nest it, so the refusal's words reach the runtime.
 */
const nestErrorBodies =
  (send: typeof fetch) =>
  async (url: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await send(url, init);
    if (res.ok || !/json/i.test(res.headers.get("content-type") ?? "")) return res;
    const text = await res.text();
    let body = text;
    try {
      const value = JSON.parse(text) as Record<string, unknown>;
      if (value && typeof value === "object" && value["error"] === undefined && typeof value["message"] === "string") {
        body = JSON.stringify({ error: { message: value["message"], type: value["type"] ?? null, code: value["code"] ?? null } });
      }
    } catch {
      // not JSON after all: passed on as it came
    }
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };

/** One attempt, on the model's API. */
async function once(openai: OpenAI, config: OpenAIModelConfig, request: ChatRequest, layout: RoleLayout, call: CallControl): Promise<ChatResponse> {
  const responses = config.api === "responses";
  const tools = (request.tools?.length ?? 0) > 0;
  const hint = `is base_url right? (${displayURL(openai.baseURL)})`;
  if (!config.stream) {
    call.phase("waiting for the reply");
    if (responses) {
      const { data, request_id } = await openai.responses.create(responsesBody(config, request, layout), { signal: call.signal }).withResponse();
      return readResponse(data, { model: config.model, request_id, tools }, hint);
    }
    const { data, request_id } = await openai.chat.completions.create(requestBody(config, request, layout), { signal: call.signal }).withResponse();
    return readCompletion(data, { model: config.model, request_id, tools }, hint);
  }
  call.phase("waiting for the reply stream");
  const {
    data: stream,
    request_id,
    response,
  } = responses
    ? await openai.responses.create({ ...responsesBody(config, request, layout), stream: true }, { signal: call.signal }).withResponse()
    : await openai.chat.completions
        .create({ ...requestBody(config, request, layout), stream: true, stream_options: { include_usage: true } }, { signal: call.signal })
        .withResponse();
  const type = response.headers.get("content-type") ?? "";
  const options = { model: config.model, request_id, tools };
  if (/json/i.test(type)) {
    // A server (or proxy) that does not stream answers the streamed request with the whole reply:
    // read as one (docs/model-servers.md#streaming). The client's stream has not read the body.
    const data: unknown = await response.json().catch(() => undefined);
    return responses ? readResponse(data, options, hint) : readCompletion(data, options, hint);
  }
  if (!/event-stream/i.test(type)) {
    stream.controller.abort();
    throw new RuntimeError(
      "MODEL_BAD_REPLY",
      `model ${config.model}: the reply is not an event stream (content-type ${type || "none"})${request_id ? ` (request id ${request_id})` : ""}; ${hint}`,
    );
  }
  const reader = responses ? new ResponsesStreamReader(options, request.onDelta) : new StreamReader(options, request.onDelta);
  call.idle(config.idle_timeout_ms, () => `the reply stream stalled: no chunk for ${config.idle_timeout_ms} ms after ${reader.count} chunk(s)`);
  try {
    for await (const chunk of stream as AsyncIterable<unknown>) {
      call.idle(config.idle_timeout_ms, () => `the reply stream stalled: no chunk for ${config.idle_timeout_ms} ms after ${reader.count} chunk(s)`);
      call.phase(`reading the reply stream (${reader.count + 1} chunk(s) so far)`);
      reader.push(chunk);
    }
  } catch (err) {
    if (err instanceof OpenAI.APIError || call.signal.aborted) throw err;
    throw new StreamBroke(err, request_id);
  }
  // The client's stream ends quietly on abort instead of throwing.
  if (call.signal.aborted) throw new OpenAI.APIUserAbortError();
  return reader.end();
}

function requestBody(config: OpenAIModelConfig, request: ChatRequest, layout: RoleLayout): ChatCompletionCreateParamsNonStreaming {
  const params: ChatCompletionCreateParamsNonStreaming = {
    // extra_body first: the runtime's own fields win.
    ...(config.extra_body as object),
    model: config.model,
    messages: layOut(request.messages, layout).map(toWireMessage),
  };
  if (request.tools && request.tools.length > 0) params.tools = request.tools.map(toWireTool);
  if (config.temperature !== undefined) params.temperature = config.temperature;
  if (config.max_tokens !== undefined) params[maxTokensParam(config.model, config.max_tokens_param)] = config.max_tokens;
  if (config.top_p !== undefined) params.top_p = config.top_p;
  if (config.seed !== undefined) params.seed = config.seed;
  if (request.response_format) {
    const { name, schema } = request.response_format;
    params.response_format = { type: "json_schema", json_schema: { name, schema: strictSchema(schema), strict: true } };
  }
  return params;
}

function withoutFormat(request: ChatRequest): ChatRequest {
  if (!request.response_format) return request;
  const { response_format: _dropped, ...rest } = request;
  return rest;
}

/** A 400 about `response_format` or its schema: the server does not take structured output. */
function isFormatRefusal(err: unknown): boolean {
  return err instanceof OpenAI.APIError && err.status === 400 && /response_format|json_schema|text\.format|structured output|guided/i.test(err.message);
}

function layoutNotice(model: string, layout: RoleLayout): string {
  return layout === "no_system"
    ? `model ${model}: the server's chat template takes no system role; requests now carry the system text in the first user message (set roles: no_system to start so)`
    : `model ${model}: the server's chat template wants one system message first and alternating user/assistant turns; requests are now laid out so (set roles: alternate to start so)`;
}

function toWireMessage(message: ChatMessage): ChatCompletionMessageParam {
  if (message.role === "assistant" && message.tool_calls && message.tool_calls.length > 0) {
    return {
      role: "assistant",
      content: message.content,
      tool_calls: message.tool_calls.map((c) => ({ id: c.id, type: "function" as const, function: { name: c.name, arguments: c.arguments } })),
    };
  }
  if (message.role === "assistant") return { role: "assistant", content: message.content };
  if (message.role === "user" && message.attachments?.length) {
    // Chat Completions takes images as image_url parts with a data: URL; PDFs are the Responses API's (docs/attachments.md).
    const images = message.attachments.map((a) => ({ type: "image_url" as const, image_url: { url: a.dataUrl() } }));
    return { role: "user", content: [{ type: "text", text: message.content }, ...images] };
  }
  if (message.role === "user") return { role: "user", content: message.content };
  return message;
}

function toWireTool(tool: ToolSpec): ChatCompletionTool {
  return { type: "function", function: { name: tool.name, description: tool.description, parameters: tool.parameters } };
}
