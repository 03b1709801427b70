/**
 * The model client's HTTP transport (docs/servers.md#the-transport): the
 * `fetch` the `openai` client is given for replies that are not streamed.
 *
 * Node's own `fetch` (undici) builds a WHATWG request, a body stream and a
 * chain of promises around every call; for a reply of a few KB that was
 * about a third of a whole 10-step run's CPU (docs/performance.md#the-transport).
 * This one sends the request with `node:http`/`node:https` on keep-alive
 * sockets, reads the reply whole (at most `MAX_REPLY_BYTES`, decompressed
 * when the server compressed it anyway) and hands the client a standard
 * `Response` built from it. Everything else goes to `fetch` as before:
 * a body that is not text, redirects, and processes that route HTTP through
 * a proxy (`HTTP(S)_PROXY`, `ALL_PROXY`) or a global undici dispatcher.
 * Deadlines stay where they were: the client's signal aborts the request.
 */
import * as http from "node:http";
import * as https from "node:https";
import * as zlib from "node:zlib";
import type { Readable } from "node:stream";

/** The most a reply may hold, decompressed: far beyond any chat completion, short of exhausting memory. */
export const MAX_REPLY_BYTES = 64 * 1024 * 1024;

/** How long an idle keep-alive socket is kept: under the 5 s after which Node servers (and many others) close theirs. */
const IDLE_SOCKET_MS = 4_000;

/** A reply that broke off before its end (a reset, a server that died mid-body). */
export class ReplyCutShort extends Error {}

/** A reply larger than `MAX_REPLY_BYTES`. */
export class ReplyTooLarge extends Error {}

let agents: { "http:": http.Agent; "https:": https.Agent } | undefined;

/**
 * Whether this process sends HTTP some other way than straight to the
 * server: a proxy in the environment, or a dispatcher of another kind than
 * undici's plain `Agent` set for `fetch` (`setGlobalDispatcher(new
 * ProxyAgent(...))`; `fetch` sets a plain one itself on first use). Those
 * keep `fetch`, which honours them.
 */
export function routedElsewhere(env: NodeJS.ProcessEnv = process.env): boolean {
  for (const name of ["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]) {
    if (env[name]) return true;
  }
  const dispatcher = (globalThis as Record<symbol, unknown>)[Symbol.for("undici.globalDispatcher.1")];
  return dispatcher !== undefined && (dispatcher as object | null)?.constructor?.name !== "Agent";
}

/** `fetch` for the openai client, as the module comment says. */
export const transportFetch = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const url = typeof input === "string" ? new URL(input) : input instanceof URL ? input : undefined;
  const body = init?.body;
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || (body != null && typeof body !== "string")) {
    return fetch(input, init);
  }
  return send(url, init ?? {}, body ?? undefined);
};

function send(url: URL, init: RequestInit, body: string | undefined): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    const signal = init.signal ?? undefined;
    if (signal?.aborted) {
      reject(abortError());
      return;
    }
    const payload = body === undefined ? undefined : Buffer.from(body, "utf8");
    const headers = plainHeaders(init.headers);
    if (payload !== undefined) headers["content-length"] = String(payload.length);
    agents ??= {
      "http:": new http.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
      "https:": new https.Agent({ keepAlive: true, timeout: IDLE_SOCKET_MS }),
    };
    const https_ = url.protocol === "https:";
    let settled = false;
    const finish = (outcome: Response | Error): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener("abort", onAbort);
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const onAbort = (): void => {
      finish(abortError());
      req.destroy();
    };
    const req = (https_ ? https : http).request(url, { method: init.method ?? "GET", headers, agent: agents[https_ ? "https:" : "http:"] }, (res) => {
      const status = res.statusCode ?? 0;
      // fetch follows redirects by its own rules (a method changed, credentials kept from another
      // origin): it sends the request again and follows. An API server hardly ever redirects.
      if (status >= 300 && status < 400 && res.headers.location !== undefined) {
        res.resume();
        settled = true;
        signal?.removeEventListener("abort", onAbort);
        resolve(fetch(url, init));
        return;
      }
      readWhole(res, (err, bytes) => {
        if (err) {
          finish(err);
          res.destroy();
          return;
        }
        finish(toResponse(res, status, bytes!, url.href));
      });
    });
    req.on("error", (err) => finish(err));
    signal?.addEventListener("abort", onAbort, { once: true });
    req.end(payload);
  });
}

/** The reply's body, whole and decompressed, or why not; `done` is called once. */
function readWhole(res: http.IncomingMessage, done: (err: Error | undefined, bytes?: Buffer) => void): void {
  const encoding = String(res.headers["content-encoding"] ?? "").trim().toLowerCase();
  let source: Readable = res;
  if (encoding === "gzip" || encoding === "x-gzip") source = res.pipe(zlib.createGunzip());
  else if (encoding === "deflate") source = res.pipe(zlib.createInflate());
  else if (encoding === "br") source = res.pipe(zlib.createBrotliDecompress());
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const end = (err: Error | undefined, bytes?: Buffer): void => {
    if (finished) return;
    finished = true;
    done(err, bytes);
  };
  source.on("data", (chunk: Buffer) => {
    if (finished) return;
    size += chunk.length;
    if (size > MAX_REPLY_BYTES) end(new ReplyTooLarge(`the reply is larger than ${MAX_REPLY_BYTES / 1024 / 1024} MiB`));
    else chunks.push(chunk);
  });
  source.on("end", () => end(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
  source.on("error", (err) => end(new ReplyCutShort(err.message)));
  // A socket that closes before the end (a reset, a server gone) leaves the reply cut short.
  res.on("close", () => {
    if (!res.complete) end(new ReplyCutShort("the connection closed before the reply was complete"));
  });
}

function toResponse(res: http.IncomingMessage, status: number, bytes: Buffer, href: string): Response {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    try {
      headers.append(raw[i]!, raw[i + 1]!);
    } catch {
      // a header fetch would not take either
    }
  }
  // The body was decompressed here: its length and encoding no longer describe it.
  headers.delete("content-encoding");
  headers.delete("content-length");
  const nullBody = status === 204 || status === 205 || status === 304;
  let response: Response;
  try {
    response = new Response(nullBody ? null : bytes, { status, statusText: res.statusMessage ?? "", headers });
  } catch {
    // A reason phrase fetch would refuse (non-Latin-1 text).
    response = new Response(nullBody ? null : bytes, { status, headers });
  }
  // As fetch's own: the client names the URL in its log lines and errors.
  Object.defineProperty(response, "url", { value: href });
  return response;
}

function plainHeaders(given: RequestInit["headers"]): Record<string, string> {
  const out: Record<string, string> = {};
  if (given === undefined) return out;
  if (given instanceof Headers || Array.isArray(given)) {
    for (const [name, value] of given as Iterable<[string, string]>) out[name.toLowerCase()] = value;
    return out;
  }
  for (const name of Object.keys(given)) {
    const value = (given as Record<string, string | undefined>)[name];
    if (value !== undefined) out[name.toLowerCase()] = value;
  }
  return out;
}

function abortError(): Error {
  return new DOMException("This operation was aborted", "AbortError");
}
