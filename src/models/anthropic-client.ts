/**
 * The ChatClient of `provider: anthropic`: Anthropic's Messages API through
 * its official client (docs/model-servers.md#anthropic), plain or streamed,
 * with the prompt cache's breakpoints (anthropic-request.ts). As the openai
 * client: the SDK's retries off and the runtime's own (call-retries.ts),
 * one deadline over the call, streams failing after `idle_timeout_ms`
 * without an event, HTTP through `model-fetch.ts`, failures one line
 * without a key.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { MessageCreateParamsNonStreaming } from "@anthropic-ai/sdk/resources/messages/messages";
import type { OpenAIModelConfig } from "../config/types.js";
import { RuntimeError } from "../errors.js";
import type { CallControl } from "./call-control.js";
import { callWithRetries, nonEmpty } from "./call-retries.js";
import { AnthropicStreamReader, readMessage } from "./anthropic-reply.js";
import { anthropicBody, systemText } from "./anthropic-request.js";
import { modelFetch } from "./model-fetch.js";
import { displayURL, type SdkErrors, StreamBroke } from "./openai-errors.js";
import type { ChatClient, ChatRequest, ChatResponse } from "./types.js";

const ANTHROPIC_ERRORS: SdkErrors = {
  APIError: Anthropic.APIError,
  APIConnectionError: Anthropic.APIConnectionError,
  APIConnectionTimeoutError: Anthropic.APIConnectionTimeoutError,
  APIUserAbortError: Anthropic.APIUserAbortError,
  path: "/v1/messages",
};

/** Creates the client of one Anthropic model; the key is checked on first use. */
export function createAnthropicChatClient(config: OpenAIModelConfig): ChatClient {
  const apiKey = nonEmpty(config.api_key) ?? nonEmpty(process.env["ANTHROPIC_API_KEY"]);
  let client: Anthropic | undefined;
  /** The system text of each agent's last request, to cache its stable head apart (anthropic-request.ts). */
  const systems = new Map<string, string>();
  const getClient = (): Anthropic => {
    if (apiKey === undefined) {
      throw new RuntimeError("MODEL_UNAVAILABLE", `model ${config.model}: no API key: set api_key in the team file or ANTHROPIC_API_KEY`);
    }
    client ??= new Anthropic({
      apiKey,
      // undefined lets the client read ANTHROPIC_BASE_URL itself
      baseURL: nonEmpty(config.base_url),
      timeout: config.timeout_ms,
      maxRetries: 0,
      fetch: modelFetch,
      ...(Object.keys(config.headers).length ? { defaultHeaders: config.headers } : {}),
    });
    return client;
  };
  return {
    model: config.model,
    async chat(request: ChatRequest): Promise<ChatResponse> {
      const anthropic = request.signal?.aborted ? undefined : getClient();
      const baseURL = anthropic?.baseURL ?? "";
      const agent = request.agent_id ?? "";
      const body = anthropicBody(config, request, systems.get(agent));
      systems.set(agent, systemText(request));
      return callWithRetries({ config, baseURL, apiKey, signal: request.signal, sdk: ANTHROPIC_ERRORS }, (_n, control) =>
        once(anthropic as Anthropic, config, request, body, control),
      );
    },
  };
}

/** One attempt. */
async function once(
  anthropic: Anthropic,
  config: OpenAIModelConfig,
  request: ChatRequest,
  body: MessageCreateParamsNonStreaming,
  call: CallControl,
): Promise<ChatResponse> {
  const hint = `is base_url right? (${displayURL(anthropic.baseURL)})`;
  const tools = (request.tools?.length ?? 0) > 0;
  if (!config.stream) {
    call.phase("waiting for the reply");
    const { data, request_id } = await anthropic.messages.create(body, { signal: call.signal }).withResponse();
    return readMessage(data, { model: config.model, request_id, tools }, hint);
  }
  call.phase("waiting for the reply stream");
  const { data: stream, request_id, response } = await anthropic.messages.create({ ...body, stream: true }, { signal: call.signal }).withResponse();
  const options = { model: config.model, request_id, tools };
  const type = response.headers.get("content-type") ?? "";
  if (/json/i.test(type)) {
    // A proxy that does not stream answers with the whole reply (docs/model-servers.md#streaming).
    const data: unknown = await response.json().catch(() => undefined);
    return readMessage(data, options, hint);
  }
  const reader = new AnthropicStreamReader(options, request.onDelta);
  const stalled = () => `the reply stream stalled: no event for ${config.idle_timeout_ms} ms after ${reader.count} event(s)`;
  call.idle(config.idle_timeout_ms, stalled);
  try {
    for await (const event of stream) {
      call.idle(config.idle_timeout_ms, stalled);
      call.phase(`reading the reply stream (${reader.count + 1} event(s) so far)`);
      reader.push(event);
    }
  } catch (err) {
    if (err instanceof Anthropic.APIError || call.signal.aborted) throw err;
    throw new StreamBroke(err, request_id);
  }
  if (call.signal.aborted) throw new Anthropic.APIUserAbortError();
  return reader.end();
}
