/**
 * `POST /v1/responses` (docs/protocols.md#openai-compatible): the Responses API's
 * shape over the same runs. A response is a run (`resp_<task_id>`), and a
 * chain of responses is a session (docs/sessions.md): a response without
 * `previous_response_id` starts a new session, one with it runs in that
 * response's session, so the session's history is what the agent sees.
 * `instructions` is not read: the agent's own prompt stands.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Usage } from "../../events/types.js";
import { storedRun } from "../../engine/resume.js";
import { mayReach } from "../access.js";
import { newId } from "../../ids.js";
import { readJsonBody, sendJson } from "../http.js";
import type { ApiContext, LaunchRequest } from "../runs-api.js";
import { errorBody, OpenAIRequestError } from "./errors.js";
import { conversationOf, saidOf, type Said } from "./messages.js";
import { agentOf } from "./models.js";
import { replyOf, type RunReply } from "./run-reply.js";
import { EventStream } from "../sse.js";

const RESPONSE_ID = /^resp_([\w.:-]{1,200})$/;

interface ResponsesRequest {
  model: string;
  launch: LaunchRequest;
  previous: string | null;
  stream: boolean;
}

async function parseResponses(ctx: ApiContext, body: unknown): Promise<ResponsesRequest> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new OpenAIRequestError(400, 'the body must be a JSON object such as {"model": "...", "input": "..."}');
  }
  const { model, input, previous_response_id, stream } = body as Record<string, unknown>;
  if (stream !== undefined && stream !== null && typeof stream !== "boolean")
    throw new OpenAIRequestError(400, "stream must be a boolean", { param: "stream" });
  const agent = agentOf(ctx.team, model);
  let said: Said[];
  if (typeof input === "string") said = [{ role: "user", text: input }];
  else if (Array.isArray(input) && input.length > 0) said = input.map((item, i) => saidOf(messageItem(item, `input[${i}]`), `input[${i}]`));
  else throw new OpenAIRequestError(400, "input must be a string or a non-empty array of message items", { param: "input" });
  const { input: text, history, attachments } = conversationOf(said, "input");
  let session_id: string;
  if (previous_response_id !== undefined && previous_response_id !== null) {
    if (history.length) {
      throw new OpenAIRequestError(400, "give the earlier turns either as previous_response_id or in input, not both", { param: "input" });
    }
    session_id = await sessionOf(ctx, previous_response_id);
  } else session_id = newId();
  return {
    model: model as string,
    launch: { input: text, agent, session_id, ...(history.length ? { history } : {}), ...(attachments.length ? { attachments } : {}) },
    previous: typeof previous_response_id === "string" ? previous_response_id : null,
    stream: stream === true,
  };
}

/** A message item (`{role, content}` or `{type: "message", role, content}`); other items (tool outputs, ...) are refused. */
function messageItem(item: unknown, param: string): unknown {
  const type = (item as Record<string, unknown> | null)?.type;
  if (type !== undefined && type !== "message") {
    throw new OpenAIRequestError(400, `${param} is a ${String(type)} item: this server reads message items only`, { param });
  }
  return item;
}

/** The session of the run a previous response was: its chain goes on there. */
async function sessionOf(ctx: ApiContext, previous: unknown): Promise<string> {
  const taskId = typeof previous === "string" ? RESPONSE_ID.exec(previous)?.[1] : undefined;
  // Someone else's response is as one that does not exist (src/server/access.ts).
  const record = taskId && (await mayReach(ctx, taskId, "read")) ? await storedRun(ctx.store, taskId).catch(() => undefined) : undefined;
  if (!record?.in_session) {
    throw new OpenAIRequestError(404, `Previous response with id '${String(previous)}' not found.`, {
      param: "previous_response_id",
      code: "previous_response_not_found",
    });
  }
  return record.session_id;
}

const usageOf = (u: Usage) => ({
  input_tokens: u.prompt_tokens,
  input_tokens_details: { cached_tokens: 0 },
  output_tokens: u.completion_tokens,
  output_tokens_details: { reasoning_tokens: 0 },
  total_tokens: u.total_tokens,
});

export async function createResponse(ctx: ApiContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const request = await parseResponses(ctx, await readJsonBody(req, ctx.maxBodyBytes));
  const created_at = Math.floor(Date.now() / 1000);
  /** The Response object of run `task_id`, as it stands. */
  const response = (task_id: string, reply: RunReply | undefined) => ({
    id: `resp_${task_id}`,
    object: "response",
    created_at,
    status: reply === undefined ? "in_progress" : reply.error ? "failed" : reply.status === "blocked" ? "incomplete" : "completed",
    error: reply?.error ? { code: "server_error", message: reply.error.message } : null,
    incomplete_details: reply?.status === "blocked" ? { reason: "content_filter" } : null,
    instructions: null,
    model: request.model,
    output: reply && !reply.error ? [message(task_id, reply.text, "completed")] : [],
    parallel_tool_calls: false,
    previous_response_id: request.previous,
    tool_choice: "auto",
    tools: [],
    metadata: { task_id, session_id: request.launch.session_id ?? "", ...(reply ? { result_type: reply.status } : {}) },
    usage: reply ? usageOf(reply.usage) : null,
  });

  if (!request.stream) {
    const { task_id, reply } = await replyOf(ctx, req, res, request.launch, (id) => res.setHeader("x-task-id", id));
    if (!reply) return;
    if (reply.error) {
      res.setHeader("x-should-retry", "false");
      return sendJson(res, 500, errorBody(500, reply.error.message, { code: reply.error.code }));
    }
    return sendJson(res, 200, response(task_id, reply));
  }

  let stream: EventStream | undefined;
  let sequence = 0;
  const send = async (type: string, data: Record<string, unknown>) => stream?.sendData({ type, sequence_number: sequence++, ...data }, type);
  let taskId = "";
  let opened = false;
  const at = () => ({ item_id: `msg_${taskId}`, output_index: 0, content_index: 0 });
  const open = async () => {
    if (opened) return;
    opened = true;
    await send("response.output_item.added", { output_index: 0, item: message(taskId, "", "in_progress", []) });
    await send("response.content_part.added", { ...at(), part: textPart("") });
  };
  const delta = async (text: string) => {
    await open();
    return send("response.output_text.delta", { ...at(), delta: text, logprobs: [] });
  };
  const { task_id, reply } = await replyOf(
    ctx,
    req,
    res,
    request.launch,
    (id) => {
      taskId = id;
      stream = new EventStream(res, { headers: { "x-task-id": id }, stallLimitMs: ctx.stallLimitMs });
      void send("response.created", { response: response(id, undefined) });
      void send("response.in_progress", { response: response(id, undefined) });
    },
    // The answer as it is written (docs/protocols.md#answers-as-they-are-written).
    delta,
  );
  if (!reply || !stream) return;
  if (reply.error) {
    await send("response.failed", { response: response(task_id, reply) });
    return stream.end();
  }
  if (reply.status === "paused" || reply.status === "blocked") await delta(reply.text);
  await open();
  // The Responses stream's closing frames, as the API sends them: clients that build the output from the
  // `.done` frames (an item at a time) need them, and the `openai` client's final response is `response.completed`'s.
  // Written with backpressure, the copies they carry cost bytes, never the stream (docs/server.md#slow-readers).
  const item = message(task_id, reply.text, "completed");
  await send("response.output_text.done", { ...at(), text: reply.text, logprobs: [] });
  await send("response.content_part.done", { ...at(), part: textPart(reply.text) });
  await send("response.output_item.done", { output_index: 0, item });
  await send(reply.status === "blocked" ? "response.incomplete" : "response.completed", { response: response(task_id, reply) });
  stream.end();
}

const textPart = (text: string) => ({ type: "output_text", text, annotations: [], logprobs: [] });

function message(task_id: string, text: string, status: "in_progress" | "completed", content = [textPart(text)]) {
  return { type: "message", id: `msg_${task_id}`, status, role: "assistant", content };
}
