/**
 * The Responses API (POST /v1/responses) for the test server in
 * openai-server.ts. A request is read into the Chat Completions body the
 * server's scripted replies are chosen from (`chatBodyOf`), so every script,
 * handler and dialect rule works on both APIs; the reply is written back as a
 * response object or as its stream of events, the way OpenAI sends them:
 * reasoning items with encrypted content the server can recognise when they
 * come back, message items with `output_text`, `function_call` items,
 * `input_tokens` / `output_tokens` usage with their details.
 */
import type { ChatBody } from "./openai-server.js";

/** A Responses API request body, as received. */
export type ResponsesBody = Record<string, unknown> & { model?: string; input?: unknown; stream?: boolean };

type Item = Record<string, unknown>;

/**
 * The request as a Chat Completions body: instructions and message items as
 * messages, `function_call` items as the calls of an assistant message,
 * `function_call_output` items as tool messages. Reasoning items are left out
 * (they are the server's own state, not the conversation).
 */
export function chatBodyOf(body: ResponsesBody): ChatBody {
  const messages: Array<Record<string, unknown>> = [];
  if (typeof body["instructions"] === "string") messages.push({ role: "system", content: body["instructions"] });
  const input =
    typeof body.input === "string" ? [{ type: "message", role: "user", content: body.input }] : Array.isArray(body.input) ? (body.input as Item[]) : [];
  for (const item of input) {
    const type = item["type"] ?? (item["role"] !== undefined ? "message" : undefined);
    if (type === "message") messages.push({ role: item["role"] === "developer" ? "system" : item["role"], content: textOf(item["content"]) });
    else if (type === "function_call") {
      const call = { id: item["call_id"], type: "function", function: { name: item["name"], arguments: item["arguments"] } };
      const last = messages.at(-1);
      if (last?.["role"] === "assistant") last["tool_calls"] = [...((last["tool_calls"] as unknown[]) ?? []), call];
      else messages.push({ role: "assistant", content: null, tool_calls: [call] });
    } else if (type === "function_call_output") messages.push({ role: "tool", tool_call_id: item["call_id"], content: textOf(item["output"]) });
  }
  const tools = Array.isArray(body["tools"])
    ? (body["tools"] as Item[]).map((t) => ({ type: "function", function: { name: t["name"], description: t["description"], parameters: t["parameters"] } }))
    : undefined;
  // A structured answer's schema (`text.format`) as Chat Completions' `response_format`.
  const format = (body["text"] as { format?: Item } | undefined)?.format;
  const response_format =
    format?.["type"] === "json_schema"
      ? { type: "json_schema", json_schema: { name: format["name"], schema: format["schema"], strict: format["strict"] } }
      : undefined;
  return {
    model: typeof body.model === "string" ? body.model : "test-model",
    messages,
    ...(body.stream === true ? { stream: true } : {}),
    ...(tools ? { tools } : {}),
    ...(response_format ? { response_format } : {}),
  };
}

/** A message item's content: a string, or its text parts joined. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return (content as Item[]).map((p) => (typeof p["text"] === "string" ? p["text"] : "")).join("");
}

/** The encrypted content of a reasoning item: opaque to the client, recognised by this server when it comes back. */
export function encryptReasoning(id: string, text: string): string {
  return Buffer.from(JSON.stringify({ id, text })).toString("base64");
}

/**
 * What OpenAI refuses in a Responses request: Chat Completions' fields, a
 * reasoning item it cannot restore (no encrypted content, or content it never
 * issued: with `store: false` nothing is kept on the server), a tool output
 * whose call is not in the input.
 */
export function responsesProblems(body: ResponsesBody, issued: ReadonlySet<string>): string[] {
  const problems: string[] = [];
  for (const key of ["messages", "max_tokens", "max_completion_tokens", "seed", "stream_options", "response_format"]) {
    if (key in body) problems.push(`Unsupported parameter: '${key}'.`);
  }
  const input = Array.isArray(body.input) ? (body.input as Item[]) : [];
  const calls = new Set<unknown>();
  input.forEach((item, i) => {
    if (item["role"] === "tool")
      problems.push(`Invalid value: 'tool'. Supported values are: 'assistant', 'system', 'developer', and 'user'. (input[${i}].role)`);
    if (item["type"] === "function_call") calls.add(item["call_id"]);
    if (item["type"] === "function_call_output" && !calls.has(item["call_id"])) {
      problems.push(`No tool call found for function call output with call_id ${String(item["call_id"])}.`);
    }
    if (item["type"] === "reasoning") {
      const content = item["encrypted_content"];
      if (typeof content !== "string" || !issued.has(content)) {
        problems.push(`Item with id '${String(item["id"])}' not found. Items are not persisted when \`store\` is set to false.`);
      }
    }
  });
  return problems;
}

/** A reply to render: what the scripted reply says, already normalised by the server. */
export interface ResponsePlan {
  id: string;
  model: string;
  content: string | null;
  tool_calls: Array<{ id: string; name: string; arguments: string }>;
  reasoning?: string;
  /** `"length"`: the response is `incomplete` at `max_output_tokens`. */
  finish_reason: string;
  usage:
    | {
        prompt_tokens: number;
        completion_tokens: number;
        prompt_tokens_details?: { cached_tokens: number };
        completion_tokens_details?: { reasoning_tokens: number };
      }
    | undefined;
}

/** The output items of a response, complete. */
export function outputItems(plan: ResponsePlan): Item[] {
  const items: Item[] = [];
  if (plan.reasoning !== undefined) {
    const id = `rs_${plan.id}`;
    items.push({
      id,
      type: "reasoning",
      summary: [{ type: "summary_text", text: plan.reasoning }],
      encrypted_content: encryptReasoning(id, plan.reasoning),
    });
  }
  if (plan.content) {
    items.push({
      id: `msg_${plan.id}`,
      type: "message",
      status: "completed",
      role: "assistant",
      content: [{ type: "output_text", text: plan.content, annotations: [], logprobs: [] }],
    });
  }
  plan.tool_calls.forEach((call, i) => {
    items.push({ id: `fc_${plan.id}_${i}`, type: "function_call", status: "completed", call_id: call.id, name: call.name, arguments: call.arguments });
  });
  return items;
}

/** The response object; `output` left empty while it is in progress. */
export function responseObject(plan: ResponsePlan, status: "in_progress" | "completed" | "incomplete", output: Item[] = []): Item {
  const usage = plan.usage;
  return {
    id: `resp_${plan.id}`,
    object: "response",
    created_at: Math.floor(Date.now() / 1000),
    status,
    error: null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    model: plan.model,
    output,
    parallel_tool_calls: true,
    store: false,
    ...(usage && status !== "in_progress"
      ? {
          usage: {
            input_tokens: usage.prompt_tokens,
            input_tokens_details: { cached_tokens: usage.prompt_tokens_details?.cached_tokens ?? 0 },
            output_tokens: usage.completion_tokens,
            output_tokens_details: { reasoning_tokens: usage.completion_tokens_details?.reasoning_tokens ?? 0 },
            total_tokens: usage.prompt_tokens + usage.completion_tokens,
          },
        }
      : {}),
  };
}

export function finalStatus(plan: ResponsePlan): "completed" | "incomplete" {
  return plan.finish_reason === "length" ? "incomplete" : "completed";
}

/**
 * The stream of events OpenAI sends for the response, as SSE (`event:` and
 * `data:` lines, no `[DONE]`): created, in progress, each item added, its
 * text, summary or arguments in deltas of `chunkSize` characters, done, and
 * the completed (or incomplete) response with every item and the usage.
 */
export function responseEvents(plan: ResponsePlan, chunkSize: number): string[] {
  let sequence_number = 0;
  const events: string[] = [];
  const emit = (type: string, fields: Item) =>
    events.push(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence_number++, ...fields })}\n\n`);
  emit("response.created", { response: responseObject(plan, "in_progress") });
  emit("response.in_progress", { response: responseObject(plan, "in_progress") });
  const items = outputItems(plan);
  items.forEach((item, output_index) => {
    const item_id = item["id"];
    if (item["type"] === "reasoning") {
      const text = plan.reasoning ?? "";
      emit("response.output_item.added", { output_index, item: { id: item_id, type: "reasoning", summary: [] } });
      emit("response.reasoning_summary_part.added", { item_id, output_index, summary_index: 0, part: { type: "summary_text", text: "" } });
      for (const delta of split(text, chunkSize)) emit("response.reasoning_summary_text.delta", { item_id, output_index, summary_index: 0, delta });
      emit("response.reasoning_summary_text.done", { item_id, output_index, summary_index: 0, text });
      emit("response.reasoning_summary_part.done", { item_id, output_index, summary_index: 0, part: { type: "summary_text", text } });
    } else if (item["type"] === "message") {
      const text = plan.content ?? "";
      emit("response.output_item.added", { output_index, item: { ...item, status: "in_progress", content: [] } });
      emit("response.content_part.added", { item_id, output_index, content_index: 0, part: { type: "output_text", text: "", annotations: [] } });
      for (const delta of split(text, chunkSize)) emit("response.output_text.delta", { item_id, output_index, content_index: 0, delta, logprobs: [] });
      emit("response.output_text.done", { item_id, output_index, content_index: 0, text, logprobs: [] });
      emit("response.content_part.done", { item_id, output_index, content_index: 0, part: { type: "output_text", text, annotations: [] } });
    } else {
      const args = String(item["arguments"]);
      emit("response.output_item.added", { output_index, item: { ...item, status: "in_progress", arguments: "" } });
      for (const delta of split(args, chunkSize)) emit("response.function_call_arguments.delta", { item_id, output_index, delta });
      emit("response.function_call_arguments.done", { item_id, output_index, arguments: args });
    }
    emit("response.output_item.done", { output_index, item });
  });
  const status = finalStatus(plan);
  emit(`response.${status}`, { response: responseObject(plan, status, items) });
  return events;
}

function split(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}
