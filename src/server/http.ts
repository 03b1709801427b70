import type { IncomingMessage, ServerResponse } from "node:http";
import { codeOf, RuntimeError, type ErrorCode } from "../errors.js";

/**
 * A request the server refuses, with the status it answers; `message` becomes
 * the JSON error body. Its code: NOT_FOUND for a 404, USAGE (the request is
 * refused as it is) for any other.
 */
export class HttpError extends RuntimeError {
  constructor(
    readonly status: number,
    message: string,
    /** Extra response headers, e.g. `allow` on a 405. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(status === 404 ? "NOT_FOUND" : "USAGE", message);
    this.name = "HttpError";
  }
}

/** The HTTP status of a failed request: an HttpError's own, else from the error's code alone. */
export function httpStatusOf(err: unknown): number {
  return err instanceof HttpError ? err.status : (STATUS_OF_CODE[codeOf(err)] ?? 500);
}

const STATUS_OF_CODE: Partial<Record<ErrorCode, number>> = {
  CONFIG_INVALID: 400,
  USAGE: 400,
  NOT_FOUND: 404,
  // The database is away: worth a retry later, unlike a bug.
  STORE: 503,
};

/** Security headers every response carries. */
export const BASE_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
});

/** Send `value` as JSON with `status`. */
export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(value);
  res.writeHead(status, {
    ...BASE_HEADERS,
    "content-type": "application/json; charset=utf-8",
    "content-length": Buffer.byteLength(body),
  });
  res.end(body);
}

/** Send `{error: message}` with `status`. */
export function sendError(res: ServerResponse, status: number, message: string, headers: Readonly<Record<string, string>> = {}): void {
  for (const [name, value] of Object.entries(headers)) res.setHeader(name, value);
  sendJson(res, status, { error: message });
}

/**
 * Read a JSON body of at most `limit` bytes: the one reader of every request
 * body the server takes (its API, OpenAI-compatible, A2A, MCP). The content
 * type must be JSON: that also keeps other origins from posting a "simple"
 * cross-site request (a form or text/plain fetch) without a CORS preflight.
 * A lone surrogate (`"\ud800"`, valid JSON, not valid Unicode) becomes
 * U+FFFD in every string and key, so what is stored and served back is
 * always valid JSON for strict parsers.
 */
export async function readJsonBody(req: IncomingMessage, limit: number, options: { optional?: boolean } = {}): Promise<unknown> {
  // An endpoint whose body is optional takes a request with none.
  if (options.optional && req.headers["content-type"] === undefined && Number(req.headers["content-length"] ?? "0") === 0) {
    for await (const _ of req) throw new HttpError(415, "the request body must be JSON (content-type: application/json)");
    return undefined;
  }
  const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
  if (type !== "application/json") throw new HttpError(415, "the request body must be JSON (content-type: application/json)");
  const declared = Number(req.headers["content-length"] ?? "0");
  if (declared > limit) throw new HttpError(413, `the request body is larger than ${limit} bytes`);

  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new HttpError(413, `the request body is larger than ${limit} bytes`);
    parts.push(chunk as Buffer);
  }
  const text = Buffer.concat(parts).toString("utf8");
  try {
    return wellFormed(JSON.parse(text) as unknown);
  } catch (err) {
    throw new HttpError(400, `the request body is not valid JSON: ${(err as Error).message}`);
  }
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `value` with every lone surrogate of its strings and keys replaced by U+FFFD. */
function wellFormed(value: unknown): unknown {
  if (typeof value === "string") return value.replace(LONE_SURROGATE, "\uFFFD");
  if (Array.isArray(value)) return value.map(wellFormed);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [wellFormed(k) as string, wellFormed(v)]));
}
