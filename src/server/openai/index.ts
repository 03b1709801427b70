/**
 * OpenAI-compatible serving (docs/protocols.md#openai-compatible): the
 * team's agents as models, Chat Completions and the Responses API, each
 * request an ordinary run started through `launchRun`. Their refusals take
 * OpenAI's error shape (src/server/openai/errors.ts, by path, in the app's
 * one error mapper).
 */
import type { Route } from "../app.js";
import { sendJson } from "../http.js";
import type { ApiContext } from "../runs-api.js";
import { chatCompletions } from "./chat.js";
import { listModels, retrieveModel } from "./models.js";
import { createResponse } from "./responses.js";

/** When the models were "created", as OpenAI's model objects say: this process's start. */
const STARTED = Math.floor(Date.now() / 1000);

/** The OpenAI-compatible routes; `as` gives a request's context. */
export function openAIRoutes(as: (c: Parameters<Route["handle"]>[2]) => ApiContext): Route[] {
  return [
    { method: "GET", path: "/v1/models", handle: (_req, res, c) => sendJson(res, 200, listModels(as(c).team, STARTED)) },
    {
      method: "GET",
      path: "/v1/models/:id{[^/]{1,200}}",
      handle: (_req, res, c) => sendJson(res, 200, retrieveModel(as(c).team, c.req.param("id") ?? "", STARTED)),
    },
    { method: "POST", path: "/v1/chat/completions", handle: (req, res, c) => chatCompletions(as(c), req, res) },
    { method: "POST", path: "/v1/responses", handle: (req, res, c) => createResponse(as(c), req, res) },
  ];
}
