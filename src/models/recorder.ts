/**
 * Records what a live model answered, in the scripted model's format, so
 * `runtime exec --record FILE` can be replayed offline with `provider: scripted`.
 */
import type { ScriptReply } from "./script-format.js";
import type { ChatClient, ChatRequest, ChatResponse } from "./types.js";
import { parseObject } from "../parse/json.js";

export { writeScript } from "./script-format.js";

/** One recorded reply; the same shape as a script reply. */
export type RecordedReply = ScriptReply;

/** Wraps any client; each successful reply is appended to `sink` in completion order. */
export function recordingClient(inner: ChatClient, sink: RecordedReply[]): ChatClient {
  return {
    model: inner.model,
    async chat(request: ChatRequest): Promise<ChatResponse> {
      const response = await inner.chat(request);
      sink.push(toRecorded(request, response));
      return response;
    },
  };
}

function toRecorded(request: ChatRequest, response: ChatResponse): RecordedReply {
  const reply: RecordedReply = {};
  if (request.agent_id !== undefined) reply.agent = request.agent_id;
  reply.content = response.content;
  if (response.tool_calls.length > 0) {
    reply.tool_calls = response.tool_calls.map((call) => ({
      id: call.id,
      name: call.name,
      // Broken JSON is kept verbatim so the replay shows the agent the same slip.
      arguments: parseObject(call.arguments) ?? call.arguments,
    }));
  }
  reply.usage = { prompt_tokens: response.usage.prompt_tokens, completion_tokens: response.usage.completion_tokens };
  return reply;
}
