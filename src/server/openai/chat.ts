/**
 * `POST /v1/chat/completions` (docs/protocols.md#openai-compatible): `model`
 * picks the agent, the messages give the input and the conversation before
 * it, and the run's answer comes back as the assistant message, whole or
 * (`stream: true`) as `chat.completion.chunk` events. The run is an ordinary
 * run: its id is in the `x-task-id` header and the completion's id.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Usage } from "../../events/types.js";
import { readJsonBody, sendJson } from "../http.js";
import type { ApiContext } from "../runs-api.js";
import { errorBody, OpenAIRequestError } from "./errors.js";
import { conversationOf, saidOf } from "./messages.js";
import { agentOf } from "./models.js";
import { replyOf, type RunReply } from "./run-reply.js";
import { EventStream } from "../sse.js";

interface ChatRequest {
  model: string;
  agent: string;
  input: string;
  history: ReturnType<typeof conversationOf>["history"];
  attachments: ReturnType<typeof conversationOf>["attachments"];
  stream: boolean;
  includeUsage: boolean;
}

/** Check a chat completion body; sampling fields and the like are the team's to set and are not read. */
function parseChat(ctx: ApiContext, body: unknown): ChatRequest {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new OpenAIRequestError(400, 'the body must be a JSON object such as {"model": "...", "messages": [...]}');
  }
  const { model, messages, stream, stream_options } = body as Record<string, unknown>;
  if (!Array.isArray(messages) || messages.length === 0) throw new OpenAIRequestError(400, "messages must be a non-empty array", { param: "messages" });
  if (stream !== undefined && stream !== null && typeof stream !== "boolean")
    throw new OpenAIRequestError(400, "stream must be a boolean", { param: "stream" });
  const agent = agentOf(ctx.team, model);
  const { input, history, attachments } = conversationOf(
    messages.map((m, i) => saidOf(m, `messages[${i}]`)),
    "messages",
  );
  const options = (stream_options ?? {}) as Record<string, unknown>;
  return { model: model as string, agent, input, history, attachments, stream: stream === true, includeUsage: options.include_usage === true };
}

const usageOf = (u: Usage) => ({ prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens });

export async function chatCompletions(ctx: ApiContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const chat = parseChat(ctx, await readJsonBody(req, ctx.maxBodyBytes));
  const created = Math.floor(Date.now() / 1000);
  const launch = {
    input: chat.input,
    agent: chat.agent,
    ...(chat.history.length ? { history: chat.history } : {}),
    ...(chat.attachments.length ? { attachments: chat.attachments } : {}),
  };
  if (!chat.stream) {
    const { task_id, reply } = await replyOf(ctx, req, res, launch, (id) => res.setHeader("x-task-id", id));
    if (!reply) return;
    if (reply.error) return failed(res, reply);
    sendJson(res, 200, {
      id: `chatcmpl-${task_id}`,
      object: "chat.completion",
      created,
      model: chat.model,
      choices: [{ index: 0, message: { role: "assistant", content: reply.text, refusal: null }, logprobs: null, finish_reason: finishReason(reply) }],
      usage: usageOf(reply.usage),
      system_fingerprint: null,
    });
    return;
  }
  let stream: EventStream | undefined;
  let chunk = async (_choices: unknown[], _usage?: Usage): Promise<unknown> => undefined;
  const content = (text: string) => chunk([{ index: 0, delta: { content: text }, logprobs: null, finish_reason: null }]);
  const { reply } = await replyOf(
    ctx,
    req,
    res,
    launch,
    (task_id) => {
      const opened = new EventStream(res, { headers: { "x-task-id": task_id }, stallLimitMs: ctx.stallLimitMs });
      stream = opened;
      const id = `chatcmpl-${task_id}`;
      chunk = (choices, usage) =>
        opened.sendData({
          id,
          object: "chat.completion.chunk",
          created,
          model: chat.model,
          system_fingerprint: null,
          choices,
          ...(chat.includeUsage ? { usage: usage ? usageOf(usage) : null } : {}),
        });
      void chunk([{ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null }]);
    },
    // The answer as it is written (docs/protocols.md#answers-as-they-are-written).
    content,
  );
  if (!reply || !stream) return;
  if (reply.error) {
    // Past the headers, a failure is an error frame: OpenAI's clients raise it from the stream.
    await stream.sendData(errorBody(500, reply.error.message, { code: reply.error.code }));
    return stream.end();
  }
  if (reply.status === "paused" || reply.status === "blocked") await content(reply.text);
  await chunk([{ index: 0, delta: {}, logprobs: null, finish_reason: finishReason(reply) }]);
  if (chat.includeUsage) await chunk([], reply.usage);
  stream.end("data: [DONE]\n\n");
}

/** A run a guardrail blocked ends as OpenAI's filtered replies do (docs/protocols.md#openai-compatible). */
const finishReason = (reply: RunReply) => (reply.status === "blocked" ? "content_filter" : "stop");

/** A run that failed: OpenAI's error body, 500, and no retry (the run is not asked again). */
function failed(res: ServerResponse, reply: RunReply): void {
  res.setHeader("x-should-retry", "false");
  sendJson(res, 500, errorBody(500, reply.error?.message ?? "the run failed", { code: reply.error?.code ?? "INTERNAL" }));
}
