/**
 * OpenAI's error bodies (docs/protocols.md#openai-compatible): every refusal
 * on the OpenAI-compatible endpoints, the token's 401 and 429 included, is
 * `{error: {message, type, param, code}}` with the status OpenAI gives it,
 * so an OpenAI client raises its own error class (AuthenticationError,
 * NotFoundError, RateLimitError, ...).
 */
import type { ServerResponse } from "node:http";
import { describeError } from "../../errors.js";
import { redactString } from "../../redact.js";
import { HttpError, httpStatusOf, sendJson } from "../http.js";

/** A request refused with OpenAI's `param` and `code` besides the status and message. */
export class OpenAIRequestError extends HttpError {
  constructor(
    status: number,
    message: string,
    readonly detail: { param?: string; code?: string } = {},
    headers: Readonly<Record<string, string>> = {},
  ) {
    super(status, message, headers);
  }
}

/** Whether a path is one of the OpenAI-compatible endpoints, whose errors take OpenAI's shape. */
export function isOpenAIPath(url: string | undefined): boolean {
  return /^\/v1\/(models|chat\/completions|responses)(\/|\?|$)/.test(url ?? "");
}

/** OpenAI's `type` and default `code` of a status. */
function kindOf(status: number): { type: string; code: string | null } {
  if (status === 401) return { type: "invalid_request_error", code: "invalid_api_key" };
  if (status === 404) return { type: "invalid_request_error", code: "not_found" };
  if (status === 429) return { type: "requests", code: "rate_limit_exceeded" };
  if (status >= 500) return { type: "server_error", code: null };
  return { type: "invalid_request_error", code: null };
}

/** The body of an OpenAI error. */
export function errorBody(status: number, message: string, detail: { param?: string; code?: string } = {}) {
  const kind = kindOf(status);
  return { error: { message, type: kind.type, param: detail.param ?? null, code: detail.code ?? kind.code } };
}

/** Answer a failed request in OpenAI's shape; an unexpected error's message is masked of the team's secrets. */
export function sendOpenAIError(res: ServerResponse, err: unknown, secrets: readonly string[]): void {
  const status = httpStatusOf(err);
  const message = err instanceof HttpError ? err.message : redactString(describeError(err), secrets);
  if (err instanceof HttpError) for (const [name, value] of Object.entries(err.headers)) res.setHeader(name, value);
  sendJson(res, status, errorBody(status, message, err instanceof OpenAIRequestError ? err.detail : {}));
}
