/**
 * The Responses API (`api: responses`, docs/model-servers.md#the-responses-api)
 * behind the same ChatClient as Chat Completions: the runtime's messages
 * mapped to input items, and a response (plain or streamed) read back into a
 * ChatResponse through the same dialect handling (`assemble`). The transport,
 * deadlines, retries and layout switches are `openai-client.ts`'s, shared.
 *
 * - system, user and assistant messages become message items; an assistant's
 *   tool calls `function_call` items, tool results `function_call_output`;
 * - reasoning items come back with their encrypted content (`store: false`,
 *   `include: ["reasoning.encrypted_content"]`) and are sent again, before
 *   the reply they came with, when a kind keeps that reply's message;
 * - `max_tokens` goes as `max_output_tokens`; `seed` is not part of the API.
 */
import type { FunctionTool, ResponseCreateParamsNonStreaming, ResponseInputContent, ResponseInputItem } from "openai/resources/responses/responses";
import type { OpenAIModelConfig } from "../config/types.js";
import { layOut, type RoleLayout, ThinkFilter, usageOf, type WireToolCall, type WireUsage } from "./dialect.js";
import { assemble, badReply, type ReadOptions } from "./openai-reply.js";
import { strictSchema } from "./strict-schema.js";
import type { ChatMessage, ChatRequest, ChatResponse, ReasoningItem, ToolSpec } from "./types.js";

/** The request body of one call. */
export function responsesBody(config: OpenAIModelConfig, request: ChatRequest, layout: RoleLayout): ResponseCreateParamsNonStreaming {
  const params: ResponseCreateParamsNonStreaming = {
    // extra_body first: the runtime's own fields win.
    ...(config.extra_body as object),
    model: config.model,
    input: layOut(request.messages, layout).flatMap(toInputItems),
    // Nothing is kept on the server: the reasoning comes back encrypted and is carried by the runtime.
    store: false,
    include: ["reasoning.encrypted_content"],
  };
  if (request.tools && request.tools.length > 0) params.tools = request.tools.map(toFunctionTool);
  if (config.temperature !== undefined) params.temperature = config.temperature;
  if (config.max_tokens !== undefined) params.max_output_tokens = config.max_tokens;
  if (config.top_p !== undefined) params.top_p = config.top_p;
  if (request.response_format) {
    const { name, schema } = request.response_format;
    params.text = { format: { type: "json_schema", name, schema: strictSchema(schema), strict: true } };
  }
  return params;
}

function toInputItems(message: ChatMessage): ResponseInputItem[] {
  switch (message.role) {
    case "system":
      return [{ type: "message", role: message.role, content: message.content }];
    case "user": {
      if (!message.attachments?.length) return [{ type: "message", role: "user", content: message.content }];
      // Images as input_image, PDFs as input_file, both inline as data: URLs (docs/attachments.md).
      const files: ResponseInputContent[] = message.attachments.map((a) =>
        a.kind === "pdf" ? { type: "input_file", filename: a.name, file_data: a.dataUrl() } : { type: "input_image", image_url: a.dataUrl(), detail: "auto" },
      );
      return [{ type: "message", role: "user", content: [{ type: "input_text", text: message.content }, ...files] }];
    }
    case "tool":
      return [{ type: "function_call_output", call_id: message.tool_call_id, output: message.content }];
    case "assistant": {
      // An Anthropic reply's thinking (anthropic-reply.ts), on a fallback, is not the Responses API's to take.
      const own = (message.reasoning_items ?? []).filter((i) => i["anthropic"] === undefined);
      const items: ResponseInputItem[] = [...(own as unknown as ResponseInputItem[])];
      if (message.content) items.push({ type: "message", role: "assistant", content: message.content });
      for (const call of message.tool_calls ?? []) items.push({ type: "function_call", call_id: call.id, name: call.name, arguments: call.arguments });
      return items;
    }
  }
}

function toFunctionTool(tool: ToolSpec): FunctionTool {
  return { type: "function", name: tool.name, description: tool.description, parameters: tool.parameters, strict: false };
}

/** A response object, as loosely as servers send it. */
interface WireResponse {
  object?: unknown;
  status?: unknown;
  output?: unknown;
  usage?: WireUsage | null;
  incomplete_details?: { reason?: unknown } | null;
  error?: { message?: unknown; code?: unknown } | null;
}

type WireItem = Record<string, unknown> & { type?: unknown };

/** A non-streamed response body (or a streamed one's final `response`, with the items the stream gave). */
export function readResponse(data: unknown, options: ReadOptions, hint?: string, streamed: WireItem[] = []): ChatResponse {
  if (typeof data !== "object" || data === null || !Array.isArray((data as WireResponse).output)) {
    throw badReply(options, "the reply is not a response of the Responses API", hint);
  }
  const body = data as WireResponse;
  if (body.status === "failed") {
    const why = typeof body.error?.message === "string" ? body.error.message : "no reason given";
    throw badReply(options, `the response failed: ${why}`);
  }
  const output = (body.output as WireItem[]).length > 0 ? (body.output as WireItem[]) : streamed;
  const texts: string[] = [];
  const reasoning: string[] = [];
  const items: ReasoningItem[] = [];
  const calls: WireToolCall[] = [];
  for (const item of output) {
    if (typeof item !== "object" || item === null) continue;
    if (item.type === "message") texts.push(partsText(item["content"], "output_text"));
    else if (item.type === "function_call" && typeof item["name"] === "string") {
      calls.push({ id: typeof item["call_id"] === "string" ? item["call_id"] : null, name: item["name"], arguments: item["arguments"] });
    } else if (item.type === "reasoning") {
      const text = partsText(item["summary"], "summary_text") || partsText(item["content"], "reasoning_text");
      if (text) reasoning.push(text);
      items.push(carried(item));
    }
  }
  const text = texts.join("");
  return {
    ...assemble(
      {
        content: texts.length > 0 ? text : null,
        reasoning: reasoning.join("\n\n") || undefined,
        calls,
        finish_reason: finishReason(body),
        usage: usageOf(body.usage),
      },
      options,
    ),
    // Only what can go back: a reasoning item without its encrypted content is of no use to a stateless server.
    ...(items.some((i) => typeof i["encrypted_content"] === "string") ? { reasoning_items: items } : {}),
  };
}

/** The parts of a reasoning item that go back: its id, summary and encrypted content (not its status). */
function carried(item: WireItem): ReasoningItem {
  const { id, summary, encrypted_content } = item;
  return {
    type: "reasoning",
    ...(id !== undefined ? { id } : {}),
    summary: Array.isArray(summary) ? summary : [],
    ...(encrypted_content ? { encrypted_content } : {}),
  };
}

function partsText(parts: unknown, type: string): string {
  if (!Array.isArray(parts)) return "";
  return parts.map((p: { type?: unknown; text?: unknown }) => (p?.type === type && typeof p.text === "string" ? p.text : "")).join("");
}

function finishReason(body: WireResponse): string {
  if (body.status !== "incomplete") return "stop";
  const reason = body.incomplete_details?.reason;
  return reason === "max_output_tokens" ? "length" : typeof reason === "string" ? reason : "length";
}

/**
 * A streamed response, event by event: the text deltas shown as they come,
 * the reply read from the final `response.completed` (or `.incomplete`)
 * event's response, with the items of `response.output_item.done` for a
 * server whose final response leaves its output out.
 */
export class ResponsesStreamReader {
  private events = 0;
  private final: unknown;
  private readonly items: WireItem[] = [];
  private failure: string | undefined;
  private readonly think = new ThinkFilter();

  constructor(
    private readonly options: ReadOptions,
    private readonly onDelta: ((text: string) => void) | undefined,
  ) {}

  get count(): number {
    return this.events;
  }

  push(event: unknown): void {
    this.events++;
    const e = event as { type?: unknown; delta?: unknown; item?: unknown; response?: unknown; message?: unknown };
    if (e.type === "response.output_text.delta" && typeof e.delta === "string" && e.delta) {
      const shown = this.think.push(e.delta);
      if (shown) this.onDelta?.(shown);
    } else if (e.type === "response.output_item.done" && typeof e.item === "object" && e.item !== null) {
      this.items.push(e.item as WireItem);
    } else if (e.type === "response.completed" || e.type === "response.incomplete" || e.type === "response.failed") {
      this.final = e.response;
    } else if (e.type === "error") {
      this.failure = typeof e.message === "string" ? e.message : "an error event";
    }
  }

  end(): ChatResponse {
    if (this.failure !== undefined) throw badReply(this.options, `the response stream failed: ${this.failure}`);
    if (this.final === undefined) {
      const what = this.events === 0 ? "the response stream carried no events" : `the response stream ended after ${this.events} event(s) without its response`;
      throw badReply(this.options, what);
    }
    return readResponse(this.final, this.options, undefined, this.items);
  }
}
