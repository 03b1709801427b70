/**
 * The model client's HTTP (docs/model-servers.md#the-transport): the `fetch` the
 * `openai` client is given, a short adapter over undici's `request()` on one
 * undici dispatcher per process.
 *
 * undici's own `fetch` on the same dispatcher cost a run about 30% more CPU
 * at 50 tasks at once, not streamed (`node bench/react-loop.mjs --throughput`:
 * 21.4-22.5 ms a task against 17.0-17.5 before this adapter): it builds a
 * WHATWG request, a body stream and a chain of promises around every call.
 * `request()` does the exchange; the dispatcher keeps the sockets alive,
 * routes through a proxy and stops a body past the cap on the wire.
 * Redirects are not followed: a model API that redirects its POSTs is a
 * base_url to correct, which the failure says (openai-errors.ts), and a
 * redirect handler kept every request whole while it waited for its reply
 * (docs/performance.md#runs-waiting-on-a-slow-model). This file reads a reply whole (an event stream as it comes),
 * decodes what the server compressed anyway, and hands the client a
 * standard `Response`.
 */
import { RuntimeError, causes } from "../errors.js";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import * as zlib from "node:zlib";
import { Agent, type Dispatcher, EnvHttpProxyAgent, errors, request } from "undici";

/** The most a reply may hold, decoded: far beyond any chat completion, short of exhausting memory. */
export const MAX_REPLY_BYTES = 64 * 1024 * 1024;

let dispatcher: Dispatcher | undefined;

/**
 * The process's dispatcher, made on first use: an `EnvHttpProxyAgent` when
 * the environment names a proxy (`HTTP_PROXY`, `HTTPS_PROXY`, either case;
 * `NO_PROXY` honoured), else a plain keep-alive `Agent`.
 */
function modelDispatcher(): Dispatcher {
  if (dispatcher) return dispatcher;
  const options = { maxResponseSize: MAX_REPLY_BYTES };
  const proxied = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"].some((name) => process.env[name]);
  dispatcher = proxied ? new EnvHttpProxyAgent(options) : new Agent(options);
  return dispatcher;
}

/** A reply whose status is no HTTP status (600-999: some bot walls answer 999), which a `Response` cannot carry. */
export class NoHttpStatus extends RuntimeError {
  constructor(message: string) {
    super("MODEL_UNAVAILABLE", message);
  }
}

/** Whether `err` (or what it wraps) is a reply over the cap: the same reply would be as large again. */
export function isTooLarge(err: unknown): boolean {
  return causes(err).some((e) => e instanceof errors.ResponseExceededMaxSizeError);
}

/** Whether `err` (or what it wraps) is a connection that closed before the reply was complete. */
export function isCutShort(err: unknown): boolean {
  return causes(err).some((e) => e instanceof errors.SocketError);
}

/** `fetch` for the openai client, as the module comment says. */
export async function modelFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const res = await request(input instanceof Request ? input.url : input, {
    method: (init.method ?? "GET") as Dispatcher.HttpMethod,
    headers: init.headers as Iterable<[string, string]>,
    body: init.body as string | null | undefined,
    signal: init.signal ?? undefined,
    dispatcher: modelDispatcher(),
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(res.headers)) {
    for (const one of Array.isArray(value) ? value : [value ?? ""]) {
      try {
        headers.append(name, one);
      } catch {
        // a header fetch would not take either
      }
    }
  }
  if (res.statusCode < 200 || res.statusCode > 599) {
    void res.body.dump().catch(() => {});
    throw new NoHttpStatus(`the server answered with status ${res.statusCode}, which is no HTTP status`);
  }
  const bodiless = res.statusCode === 204 || res.statusCode === 205 || res.statusCode === 304 || init.method === "HEAD";
  const decoded = bodiless ? res.body : decode(res.body, headers.get("content-encoding"));
  let body: ConstructorParameters<typeof Response>[0] = null;
  if (bodiless) void res.body.dump().catch(() => {});
  else if (/event-stream/i.test(headers.get("content-type") ?? "")) body = Readable.toWeb(decoded) as ReadableStream<Uint8Array>;
  else body = await readWhole(decoded);
  const response = new Response(body, { status: res.statusCode, headers });
  // As fetch's own: the client names the URL in its log lines.
  Object.defineProperty(response, "url", { value: String(input instanceof Request ? input.url : input) });
  return response;
}

async function readWhole(body: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(chunk as Buffer);
  return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
}

/** Lenient as `fetch` is (and curl): a stream that ends early yields what it holds. */
const SYNC = { flush: zlib.constants.Z_SYNC_FLUSH, finishFlush: zlib.constants.Z_SYNC_FLUSH };
const DECODERS: Record<string, () => NodeJS.ReadWriteStream> = {
  gzip: () => zlib.createGunzip(SYNC),
  "x-gzip": () => zlib.createGunzip(SYNC),
  deflate: () => zlib.createInflate(SYNC),
  br: () => zlib.createBrotliDecompress({ flush: zlib.constants.BROTLI_OPERATION_FLUSH, finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH }),
};

/**
 * The body decoded as `fetch` decodes it (the request asks for no
 * compression, but some proxies compress anyway): each coding undone, last
 * first; none when one is unknown. The cap counts decoded bytes, so a small
 * bomb stops at it too.
 */
function decode(body: Readable, encoding: string | null): Readable {
  const codings = (encoding ?? "")
    .toLowerCase()
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "" && c !== "identity")
    .reverse();
  if (codings.length === 0 || !codings.every((c) => c in DECODERS)) return body;
  let size = 0;
  const capped = new Readable({ read() {} });
  const stages = [body, ...codings.map((c) => DECODERS[c]!())];
  void pipeline(...(stages as [Readable]), async (source: AsyncIterable<Buffer>) => {
    for await (const chunk of source) {
      size += chunk.length;
      if (size > MAX_REPLY_BYTES) throw new errors.ResponseExceededMaxSizeError();
      capped.push(chunk);
    }
  }).then(
    () => capped.push(null),
    (err: unknown) => capped.destroy(err as Error),
  );
  return capped;
}
