import type { IncomingMessage, ServerResponse } from "node:http";

/** A request the server refuses; `status` and a one-line `message` become the JSON error body. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Extra response headers, e.g. `allow` on a 405. */
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = "HttpError";
  }
}

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
 * Read a JSON body of at most `limit` bytes. The content type must be JSON:
 * that also keeps other origins from posting a "simple" cross-site request
 * (a form or text/plain fetch) without a CORS preflight.
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
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new HttpError(400, `the request body is not valid JSON: ${(err as Error).message}`);
  }
}
