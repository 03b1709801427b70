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
 * a body that is not text, a URL with credentials (which fetch refuses),
 * redirects, and processes that route HTTP elsewhere (`routedElsewhere`).
 * Deadlines stay where they were: the client's signal aborts the request.
 */
import * as http from "node:http";
import * as https from "node:https";
import * as zlib from "node:zlib";
import { Transform, type Readable, type TransformCallback } from "node:stream";

/** The most a reply may hold, decompressed: far beyond any chat completion, short of exhausting memory. */
export const MAX_REPLY_BYTES = 64 * 1024 * 1024;

/** How long an idle keep-alive socket is kept: under the 5 s after which Node servers (and many others) close theirs. */
const IDLE_SOCKET_MS = 4_000;

/** A reply that broke off before its end (a reset, a server that died mid-body). */
export class ReplyCutShort extends Error {}

/** A reply larger than `MAX_REPLY_BYTES`. */
export class ReplyTooLarge extends Error {}

/** A reply whose status is no HTTP status (600-999: some bot walls answer 999), which a `Response` cannot carry. */
export class ReplyStatusUnknown extends Error {
  constructor(readonly status: number) {
    super(`the server answered with status ${status}, which is no HTTP status`);
  }
}

let agents: { "http:": http.Agent; "https:": https.Agent } | undefined;

/**
 * Whether this process wants its HTTP sent some other way than straight to
 * the server, and so keeps `fetch` for model calls too:
 * - `RUNTIME_TRANSPORT=fetch` says so outright (a global undici `Agent` of
 *   one's own, with TLS options say, cannot be told from the one `fetch`
 *   sets itself on first use);
 * - a proxy in the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`,
 *   either case), which the `fetch` of Node 24 honours with
 *   `NODE_USE_ENV_PROXY`;
 * - a global dispatcher of another kind than undici's plain `Agent`
 *   (`setGlobalDispatcher(new ProxyAgent(...))`).
 */
export function routedElsewhere(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env["RUNTIME_TRANSPORT"] === "fetch") return true;
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
  if (
    url === undefined ||
    (url.protocol !== "http:" && url.protocol !== "https:") ||
    url.username !== "" ||
    url.password !== "" ||
    (body != null && typeof body !== "string")
  ) {
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
    let responded = false;
    const finish = (outcome: Response | Promise<Response> | Error): void => {
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
      responded = true;
      const status = res.statusCode ?? 0;
      // fetch follows redirects by its own rules (a method changed, no key sent to another
      // origin): it sends the request again and follows. An API server hardly ever redirects.
      if (status >= 300 && status < 400 && res.headers.location !== undefined) {
        res.resume();
        finish(fetch(url, init));
        return;
      }
      if (status < 200 || status > 599) {
        res.resume();
        finish(new ReplyStatusUnknown(status));
        return;
      }
      const bodiless = status === 204 || status === 205 || status === 304 || init.method === "HEAD";
      readWhole(res, bodiless, (err, bytes) => {
        if (err) {
          finish(err);
          res.destroy();
          return;
        }
        try {
          finish(toResponse(res, status, bodiless ? null : bytes!, url.href));
        } catch (failure) {
          finish(failure instanceof Error ? failure : new Error(String(failure)));
        }
      });
    });
    req.on("error", (err) => finish(err));
    // Whatever else ends the exchange without a reply (an unasked-for 101, a socket gone) ends the call too.
    req.on("close", () => {
      if (!responded) finish(new ReplyCutShort("the connection closed before the reply was complete"));
    });
    signal?.addEventListener("abort", onAbort, { once: true });
    req.end(payload);
  });
}

/**
 * The reply's body, whole and decoded as `fetch` decodes it (undici): each
 * coding of `content-encoding` undone, last first; none when one of them is
 * unknown or the reply has no body; a body cut short inside its compression
 * read as far as it goes. The cap counts decoded bytes, so a bomb stops at
 * it. `done` is called once.
 */
function readWhole(res: http.IncomingMessage, bodiless: boolean, done: (err: Error | undefined, bytes?: Buffer) => void): void {
  const decoders = bodiless ? [] : decodersOf(res.headers["content-encoding"]);
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const end = (err: Error | undefined, bytes?: Buffer): void => {
    if (finished) return;
    finished = true;
    if (err) for (const decoder of decoders) decoder.destroy();
    done(err, bytes);
  };
  let source: Readable = res;
  for (const decoder of decoders) source = source.pipe(decoder);
  source.on("data", (chunk: Buffer) => {
    if (finished) return;
    size += chunk.length;
    if (size > MAX_REPLY_BYTES) end(new ReplyTooLarge(`the reply is larger than ${MAX_REPLY_BYTES / 1024 / 1024} MiB`));
    else chunks.push(chunk);
  });
  source.on("end", () => end(undefined, chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size)));
  for (const decoder of decoders) decoder.on("error", (err) => end(new ReplyCutShort(err.message)));
  res.on("error", (err) => end(new ReplyCutShort(err.message)));
  // A socket that closes before the end (a reset, a server gone) leaves the reply cut short.
  res.on("close", () => {
    if (!res.complete) end(new ReplyCutShort("the connection closed before the reply was complete"));
  });
}

/** As undici decompresses: a stream that ends early yields what it holds instead of an error. */
const LENIENT = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
const LENIENT_BROTLI = { flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH };

/** The decoders of a `content-encoding`, in the order to apply them; none when a coding is unknown (the body passes as it came). */
function decodersOf(header: string | undefined): Transform[] {
  if (header === undefined) return [];
  const codings = header
    .toLowerCase()
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "" && c !== "identity");
  const decoders: Transform[] = [];
  for (let i = codings.length - 1; i >= 0; i--) {
    const coding = codings[i];
    if (coding === "gzip" || coding === "x-gzip") decoders.push(zlib.createGunzip(LENIENT));
    else if (coding === "deflate") decoders.push(new SniffedInflate());
    else if (coding === "br") decoders.push(zlib.createBrotliDecompress(LENIENT_BROTLI));
    else return [];
  }
  return decoders;
}

/** Deflate as servers send it, zlib-wrapped or raw: the first byte says which (as undici tells them apart). */
class SniffedInflate extends Transform {
  private inflate: zlib.Inflate | zlib.InflateRaw | undefined;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.inflate === undefined) {
      if (chunk.length === 0) {
        callback();
        return;
      }
      this.inflate = (chunk[0]! & 0x0f) === 0x08 ? zlib.createInflate(LENIENT) : zlib.createInflateRaw(LENIENT);
      this.inflate.on("data", (data: Buffer) => this.push(data));
      this.inflate.on("error", (err) => this.destroy(err));
    }
    this.inflate.write(chunk, callback);
  }

  override _flush(callback: TransformCallback): void {
    if (this.inflate === undefined) {
      callback();
      return;
    }
    this.inflate.once("end", () => callback());
    this.inflate.end();
  }

  override _destroy(err: Error | null, callback: (error: Error | null) => void): void {
    this.inflate?.destroy();
    callback(err);
  }
}

function toResponse(res: http.IncomingMessage, status: number, bytes: Buffer | null, href: string): Response {
  const headers = new Headers();
  const raw = res.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    try {
      headers.append(raw[i]!, raw[i + 1]!);
    } catch {
      // a header fetch would not take either
    }
  }
  // As fetch: the headers as the server sent them, though the body was decoded.
  let response: Response;
  try {
    response = new Response(bytes, { status, statusText: res.statusMessage ?? "", headers });
  } catch {
    // A reason phrase a Response would refuse (non-Latin-1 text).
    response = new Response(bytes, { status, headers });
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
