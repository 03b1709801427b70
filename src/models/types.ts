import type { Usage } from "../events/types.js";
import type { JsonSchema } from "../config/types.js";
import type { Attachment } from "./attachment.js";

/** A tool call as the model asked for it; `arguments` is the raw JSON text. */
export interface ToolCallRequest {
  id: string;
  name: string;
  arguments: string;
}

/**
 * A reasoning item of the Responses API (`{type: "reasoning", id, summary,
 * encrypted_content}`), or an Anthropic thinking block (`{type: "reasoning",
 * anthropic: block}`), kept as the server sent it: opaque to the runtime,
 * carried back before the reply it came with on the next turn, to the API
 * it came from (docs/model-servers.md#the-responses-api, #anthropic).
 */
export type ReasoningItem = { type: "reasoning" } & Record<string, unknown>;

/** Chat Completions messages, the subset the runtime sends. */
export type ChatMessage =
  | { role: "system"; content: string }
  | {
      role: "user";
      content: string;
      /** Files sent with the text: image parts, PDF file parts (docs/attachments.md). Only the run's first user message has them. */
      attachments?: readonly Attachment[];
    }
  | {
      role: "assistant";
      content: string | null;
      tool_calls?: ToolCallRequest[];
      /** The reply's reasoning items, sent back on the Responses API only (Chat Completions never sends reasoning back). */
      reasoning_items?: ReasoningItem[];
    }
  | { role: "tool"; tool_call_id: string; content: string };

/** What the model is offered as a function tool. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** A JSON Schema the reply's content must match (`response_format: json_schema`). */
export interface ResponseFormat {
  name: string;
  schema: JsonSchema;
}

export interface ChatRequest {
  messages: ChatMessage[];
  tools?: ToolSpec[];
  /** Asked for only from a model marked `structured_output: true`; others get the instructions alone. */
  response_format?: ResponseFormat;
  signal?: AbortSignal;
  /** Called with each streamed text delta, when the model streams. */
  onDelta?: (text: string) => void;
  /** The agent asking; the scripted model uses it to pick replies. */
  agent_id?: string;
  /** Told when the client adapts to the server (docs/model-servers.md); the engine emits it as `llm.notice`. */
  onNotice?: (notice: { notice: "layout" | "structured_output"; message: string }) => void;
}

export interface ChatResponse {
  content: string | null;
  tool_calls: ToolCallRequest[];
  usage: Usage;
  finish_reason: string;
  /** The model's reasoning, apart from `content` (which never holds it): never parsed, never sent back. */
  reasoning?: string;
  /** The provider's request id, when it sends one (for error reports). */
  request_id?: string;
  /** The Responses API's reasoning items, for the next turn: a kind that keeps this reply's message carries them on it. */
  reasoning_items?: ReasoningItem[];
}

/**
 * The one interface every model sits behind: the `openai`-backed client and
 * the scripted client alike. Failures throw a `RuntimeError` with code
 * MODEL_UNAVAILABLE or MODEL_BAD_REPLY and a one-line message (status,
 * provider message, request id), never a key.
 */
export interface ChatClient {
  /** Model name, as reported in events. */
  readonly model: string;
  chat(request: ChatRequest): Promise<ChatResponse>;
  /**
   * A resumed run reused the recorded reply to this request instead of
   * asking (docs/durable-runs.md): a client whose replies depend on those it
   * gave before (the scripted model) moves on as if it had given it.
   */
  replayed?(request: ChatRequest): void;
}
