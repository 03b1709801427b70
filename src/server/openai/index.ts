/**
 * OpenAI-compatible serving (docs/protocols.md#openai-compatible): the
 * team's agents as models, Chat Completions and the Responses API, each
 * request an ordinary run started through `launchRun`.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { sendJson } from "../http.js";
import type { ApiContext } from "../runs-api.js";
import { chatCompletions } from "./chat.js";
import { listModels, retrieveModel } from "./models.js";
import { createResponse } from "./responses.js";

export { isOpenAIPath, sendOpenAIError } from "./errors.js";

export type OpenAIEndpoint = "models" | "model" | "chat" | "responses";

/** When the models were "created", as OpenAI's model objects say: this process's start. */
const STARTED = Math.floor(Date.now() / 1000);

/** Answer one OpenAI-compatible request; `id` is the model of `GET /v1/models/:id`. */
export function serveOpenAI(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, endpoint: OpenAIEndpoint, id: string): Promise<void> | void {
  switch (endpoint) {
    case "models":
      return sendJson(res, 200, listModels(ctx.team, STARTED));
    case "model":
      return sendJson(res, 200, retrieveModel(ctx.team, id, STARTED));
    case "chat":
      return chatCompletions(ctx, req, res);
    case "responses":
      return createResponse(ctx, req, res);
  }
}
