/**
 * What a model client threw, in one line a user can act on (status,
 * provider message, request id, a hint), never carrying a key; and whether
 * it is worth another attempt. The `openai` client's error classes by
 * default; Anthropic's client, made by the same generator, has the same
 * classes, given as `sdk`.
 */
import OpenAI from "openai";
import { RuntimeError, causes } from "../errors.js";
import { isCutShort, isTooLarge, MAX_REPLY_BYTES, NoHttpStatus } from "./model-fetch.js";
import type { OpenAIModelConfig } from "../config/types.js";

/** The error classes of a model client: the `openai` client's, or the same set of another SDK made by the same generator. */
export interface SdkErrors {
  APIError: abstract new (
    ...args: never[]
  ) => Error & { status?: number | undefined; headers?: Headers | undefined; error?: unknown; requestID?: string | null | undefined };
  APIConnectionError: abstract new (...args: never[]) => Error;
  APIConnectionTimeoutError: abstract new (...args: never[]) => Error;
  APIUserAbortError: abstract new (...args: never[]) => Error;
  /** The path a wrong base_url's 404 names. */
  path: string;
}

export const OPENAI_ERRORS: SdkErrors = {
  APIError: OpenAI.APIError,
  APIConnectionError: OpenAI.APIConnectionError,
  APIConnectionTimeoutError: OpenAI.APIConnectionTimeoutError,
  APIUserAbortError: OpenAI.APIUserAbortError,
  path: "/chat/completions",
};

/** A stream that broke off mid-way (undici's bare "terminated"): retried like a dropped connection. */
export class StreamBroke extends RuntimeError {
  constructor(
    original: unknown,
    readonly request_id?: string | null,
  ) {
    super("MODEL_UNAVAILABLE", String((original as Error)?.message ?? original), { cause: original });
  }
}

/** Connection errors, a body or stream cut short, 408, 409, 429 and 5xx are tried again. */
export function isRetryable(err: unknown, sdk: SdkErrors = OPENAI_ERRORS): boolean {
  if (err instanceof sdk.APIUserAbortError) return false;
  // The same reply would be as large again.
  if (isTooLarge(err)) return false;
  if (err instanceof sdk.APIConnectionError || err instanceof StreamBroke) return true;
  if (err instanceof sdk.APIError) {
    const status = err.status ?? 0;
    return status === 408 || status === 409 || status === 429 || status >= 500;
  }
  // undici's "terminated": the connection closed while the body was read.
  return err instanceof TypeError && /terminated|other side closed|socket/i.test(err.message);
}

/** The wait a 429 or 503 asks for (`retry-after-ms`, `retry-after` in seconds or as a date), in ms. */
export function retryAfterMs(err: unknown, sdk: SdkErrors = OPENAI_ERRORS): number | undefined {
  if (!(err instanceof sdk.APIError) || !err.headers) return undefined;
  const ms = Number.parseFloat(err.headers.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const header = err.headers.get("retry-after");
  if (!header) return undefined;
  const secs = Number.parseFloat(header);
  if (Number.isFinite(secs)) return Math.max(0, secs * 1000);
  const date = Date.parse(header);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/** Maps whatever the client threw to a one-line RuntimeError; the cause is dropped so no header can leak. */
export function describeFailure(
  err: unknown,
  config: OpenAIModelConfig,
  baseURL: string,
  apiKey: string | undefined,
  attempts: number,
  sdk: SdkErrors = OPENAI_ERRORS,
): RuntimeError {
  const model = config.model;
  const after = attempts > 1 ? ` after ${attempts} attempts` : "";
  const url = displayURL(baseURL);
  const tries = ` after ${attempts === 1 ? "1 attempt" : `${attempts} attempts`}`;
  if (err instanceof sdk.APIConnectionTimeoutError) {
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: no response within ${config.timeout_ms} ms from ${url}${tries}`);
  }
  if (isTooLarge(err)) {
    return new RuntimeError(
      "MODEL_BAD_REPLY",
      `model ${model}: the reply is larger than ${MAX_REPLY_BYTES / 1024 / 1024} MiB (from ${url}); is base_url right?`,
    );
  }
  // A broken stream is a RuntimeError already; its message still needs the model and the request id.
  if (err instanceof StreamBroke) {
    const id = err.request_id ? ` (request id ${err.request_id})` : "";
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: the reply stream broke off (${oneLine(redact(err.message, apiKey))})${id}${after}`);
  }
  if (err instanceof RuntimeError) return err;
  if (err instanceof sdk.APIConnectionError && err.cause instanceof NoHttpStatus) {
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: ${err.cause.message} (from ${url})${after}`);
  }
  if (err instanceof sdk.APIConnectionError && isCutShort(err)) {
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: the connection closed before the reply was complete${after}`);
  }
  if (err instanceof sdk.APIConnectionError) {
    const code = socketCode(err);
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: connection failed to ${url}${code ? ` (${code})` : ""}${tries}`);
  }
  if (err instanceof sdk.APIError) {
    // the client already prefixes the status: "500 Internal error"
    const text = oneLine(redact(err.message, apiKey));
    const details = [err.requestID ? `request id ${err.requestID}` : "", after.trim()].filter(Boolean);
    // A 404 without an OpenAI-style error body is a wrong URL, not a missing model.
    const apiBody = typeof err.error === "object" && err.error !== null && "message" in err.error;
    const hint = err.status === 404 && !apiBody ? `; is base_url right? ${url}${sdk.path} was not found` : "";
    // Redirects are not followed (docs/model-servers.md#the-transport): where it points is the base_url to give.
    const location = err.status !== undefined && err.status >= 300 && err.status < 400 ? err.headers?.get("location") : undefined;
    if (location) {
      const to = displayURL(URL.canParse(location, url) ? new URL(location, url).href : location);
      return new RuntimeError(
        "MODEL_UNAVAILABLE",
        `model ${model}: the server redirects to ${to} (status ${err.status}), which is not followed; is base_url right?`,
      );
    }
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: ${text}${details.length ? ` (${details.join(", ")})` : ""}${hint}`);
  }
  if (err instanceof SyntaxError) return new RuntimeError("MODEL_BAD_REPLY", `model ${model}: the reply is not valid JSON`);
  if (isRetryable(err, sdk)) {
    return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: the connection closed before the reply was complete${after}`);
  }
  return new RuntimeError("MODEL_UNAVAILABLE", `model ${model}: ${oneLine(redact(String((err as Error)?.message ?? err), apiKey))}`);
}

/** A base URL fit for a message: without user:password@, query string or fragment, where keys sometimes hide. */
export function displayURL(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return url.replace(/\/\/[^/@]*@/, "//").replace(/[?#].*$/, "");
  }
}

/** Providers echo parts of a rejected key back ("Incorrect API key provided: sk-ab***"); keep none of it. */
function redact(text: string, apiKey: string | undefined): string {
  let out = apiKey ? text.split(apiKey).join("***") : text;
  out = out.replace(/\b(sk|key|pk)-[A-Za-z0-9_*-]{3,}/g, "$1-***");
  return out.replace(/Bearer\s+\S+/gi, "Bearer ***");
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > 300 ? `${flat.slice(0, 297)}...` : flat;
}

/** The code of the socket or undici error under a failed connection (ECONNREFUSED, ECONNRESET, UND_ERR_SOCKET...): why, and never a secret. */
function socketCode(err: unknown): string | undefined {
  for (const e of causes(err)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^[A-Z][A-Z_]+$/.test(code)) return code;
    // Node's AggregateError (every address of a name refused) carries its codes on its errors.
    if (e instanceof AggregateError) return socketCode(e.errors[0]);
  }
  return undefined;
}
