/**
 * The model client's HTTP (docs/servers.md#the-transport): undici's own
 * `fetch` over one undici dispatcher per process, given to the `openai`
 * client. undici keeps the sockets alive, follows redirects, decodes
 * compressed replies and routes through a proxy as `fetch` does; this file
 * only chooses the dispatcher and caps a reply's size.
 */
import { Agent, type Dispatcher, EnvHttpProxyAgent, errors, fetch as undiciFetch } from "undici";

/** The most a reply may hold, decoded: far beyond any chat completion, short of exhausting memory. */
export const MAX_REPLY_BYTES = 64 * 1024 * 1024;

let dispatcher: Dispatcher | undefined;

/**
 * The process's dispatcher, made on first use: an `EnvHttpProxyAgent` when
 * the environment names a proxy (`HTTP_PROXY`, `HTTPS_PROXY`, either case;
 * `NO_PROXY` honoured), else a plain keep-alive `Agent`. Either stops a reply
 * whose body passes the cap on the wire.
 */
function modelDispatcher(): Dispatcher {
  if (dispatcher) return dispatcher;
  const options = { maxResponseSize: MAX_REPLY_BYTES };
  const proxied = ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"].some((name) => process.env[name]);
  dispatcher = proxied ? new EnvHttpProxyAgent(options) : new Agent(options);
  return dispatcher;
}

/** Whether `err` (or what it wraps) is a reply over the cap: the same reply would be as large again. */
export function isTooLarge(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 3; e = e.cause, depth++) {
    if (e instanceof errors.ResponseExceededMaxSizeError) return true;
  }
  return false;
}

/** `fetch` for the openai client: undici's, on the process's dispatcher, a compressed reply capped once decoded too. */
export const modelFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const res = (await undiciFetch(input as Parameters<typeof undiciFetch>[0], {
    ...(init as Parameters<typeof undiciFetch>[1]),
    dispatcher: modelDispatcher(),
  })) as unknown as Response;
  // The dispatcher counts the bytes on the wire; a small compressed reply can decode
  // to gigabytes, so such a body is counted again as it is read.
  if (res.body === null || !res.headers.has("content-encoding")) return res;
  const capped = new Response(res.body.pipeThrough(decodedCap()), res);
  // As fetch's own: the client names the URL in its log lines.
  Object.defineProperty(capped, "url", { value: res.url });
  return capped;
};

function decodedCap(): TransformStream<Uint8Array, Uint8Array> {
  let size = 0;
  return new TransformStream({
    transform(chunk, controller) {
      size += chunk.byteLength;
      if (size > MAX_REPLY_BYTES) controller.error(new errors.ResponseExceededMaxSizeError());
      else controller.enqueue(chunk);
    },
  });
}
