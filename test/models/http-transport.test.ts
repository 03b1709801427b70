/**
 * The model client's own HTTP transport (docs/servers.md#the-transport),
 * through the real `openai` client against servers on 127.0.0.1: the
 * project's test server, and bare `node:http` servers for what it does not
 * do (compression, redirects, huge and slow replies).
 */
import { readFileSync } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import * as zlib from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import type { OpenAIModelConfig } from "../../src/config/types.js";
import { MAX_REPLY_BYTES, routedElsewhere, transportFetch } from "../../src/models/http-transport.js";
import { createOpenAIChatClient } from "../../src/models/openai-client.js";
import type { ChatRequest } from "../../src/models/types.js";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { OPENAI_MODEL_DEFAULTS, reactReply, writeTeam } from "../support/team.js";
import { failure } from "../support/failure.js";

const KEY = "sk-transport-SECRET-7654321";
const request: ChatRequest = { messages: [{ role: "user", content: "hi" }] };
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function config(baseURL: string, overrides: Partial<OpenAIModelConfig> = {}): OpenAIModelConfig {
  return { name: "default", provider: "openai", model: "m", base_url: baseURL, api_key: KEY, timeout_ms: 5000, max_retries: 0, stream: false, ...OPENAI_MODEL_DEFAULTS, ...overrides };
}

async function testServer(options: Parameters<typeof startOpenAIServer>[0]): Promise<OpenAIServer> {
  const server = await startOpenAIServer(options);
  closers.push(() => server.close());
  return server;
}

/** A bare server (HTTPS with `tls`); `handle` answers every request. Counts connections and requests. */
async function bareServer(handle: (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void, tls?: https.ServerOptions) {
  const seen = { connections: 0, requests: [] as { url: string; headers: http.IncomingHttpHeaders; body: string }[], closed: 0 };
  const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
    let body = "";
    req.setEncoding("utf8");
    req.on("data", (c: string) => (body += c));
    req.on("end", () => {
      seen.requests.push({ url: req.url ?? "", headers: req.headers, body });
      handle(req, res, body);
    });
  };
  const server = tls ? https.createServer(tls, listener) : http.createServer(listener);
  server.on("connection", (socket) => {
    seen.connections++;
    socket.on("close", () => seen.closed++);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `${tls ? "https" : "http"}://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, seen };
}

const completion = (content: string) =>
  JSON.stringify({ id: "c1", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } });


/** Counts the calls that go through the global fetch while `body` runs. */
async function countingFetch(body: () => Promise<void>): Promise<number> {
  const original = globalThis.fetch;
  let calls = 0;
  globalThis.fetch = (input, init) => {
    calls++;
    return original(input, init);
  };
  try {
    await body();
  } finally {
    globalThis.fetch = original;
  }
  return calls;
}

describe("the transport", () => {
  it("sends the request as fetch did (key, length, JSON body) and keeps one connection for the calls after", async () => {
    const server = await testServer({ replies: [{ content: "one" }, { content: "two" }, { content: "three" }] });
    const c = createOpenAIChatClient(config(server.url));
    const replies = [];
    for (let i = 0; i < 3; i++) replies.push((await c.chat(request)).content);
    expect(replies).toEqual(["one", "two", "three"]);
    expect(server.chatRequests).toHaveLength(3);
    const [first] = server.chatRequests;
    expect(first!.headers["authorization"]).toBe(`Bearer ${KEY}`);
    expect(first!.headers["content-type"]).toBe("application/json");
    expect(first!.body).toMatchObject({ model: "m", messages: [{ role: "user", content: "hi" }] });

    const bare = await bareServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(completion("ok")));
    const b = createOpenAIChatClient(config(bare.url));
    for (let i = 0; i < 3; i++) expect((await b.chat(request)).content).toBe("ok");
    expect(bare.seen.connections).toBe(1);
    // A length, not a chunked body: some servers refuse chunked requests.
    expect(bare.seen.requests[0]!.headers["content-length"]).toBe(String(Buffer.byteLength(bare.seen.requests[0]!.body)));
    expect(bare.seen.requests[0]!.headers["transfer-encoding"]).toBeUndefined();
  });

  it("carries replies read whole itself, and leaves streams to fetch", async () => {
    const server = await testServer({ replies: [{ content: "whole" }, { content: "streamed" }] });
    expect(await countingFetch(async () => expect((await createOpenAIChatClient(config(server.url)).chat(request)).content).toBe("whole"))).toBe(0);
    expect(await countingFetch(async () => expect((await createOpenAIChatClient(config(server.url, { stream: true })).chat(request)).content).toBe("streamed"))).toBe(1);
  });

  for (const [encoding, compress] of [
    ["gzip", zlib.gzipSync],
    ["deflate", zlib.deflateSync],
    ["br", zlib.brotliCompressSync],
  ] as const) {
    it(`reads a reply the server compressed with ${encoding} though nobody asked`, async () => {
      const bare = await bareServer((_req, res) => res.writeHead(200, { "content-type": "application/json", "content-encoding": encoding }).end(compress(completion("squeezed é"))));
      const reply = await createOpenAIChatClient(config(bare.url)).chat(request);
      expect(reply.content).toBe("squeezed é");
    });
  }

  it(`fails a reply larger than ${MAX_REPLY_BYTES / 1024 / 1024} MiB in one line, without asking again`, async () => {
    const chunk = Buffer.alloc(1024 * 1024, 0x61);
    const bare = await bareServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      let sent = 0;
      const more = (): void => {
        while (sent <= MAX_REPLY_BYTES) {
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once("drain", more);
            return;
          }
        }
        res.end();
      };
      res.on("error", () => {});
      more();
    });
    const err = await failure(createOpenAIChatClient(config(bare.url, { max_retries: 2 })).chat(request));
    expect(err.code).toBe("MODEL_BAD_REPLY");
    expect(err.message).toBe(`model m: the reply is larger than 64 MiB (from ${bare.url}); is base_url right?`);
    expect(bare.seen.requests).toHaveLength(1);
  });

  it("follows a redirect as fetch does, by handing the request to fetch", async () => {
    const bare = await bareServer((req, res) => {
      if (req.url?.startsWith("/v1/")) res.writeHead(307, { location: req.url.replace("/v1/", "/v2/") }).end();
      else res.writeHead(200, { "content-type": "application/json" }).end(completion(`at ${req.url}`));
    });
    const reply = await createOpenAIChatClient(config(bare.url)).chat(request);
    expect(reply.content).toBe("at /v2/chat/completions");
    // fetch sends it again and follows by its own rules (a method changed, a key not sent to another origin).
    expect(bare.seen.requests.map((r) => r.url)).toEqual(["/v1/chat/completions", "/v1/chat/completions", "/v2/chat/completions"]);
    expect(JSON.parse(bare.seen.requests[2]!.body)).toMatchObject({ model: "m" });
  });

  it("takes a reply slower than an idle socket's life, on a socket kept from the call before", async () => {
    let calls = 0;
    const bare = await bareServer((_req, res) => {
      const wait = calls++ === 0 ? 0 : 4_500;
      setTimeout(() => res.writeHead(200, { "content-type": "application/json" }).end(completion(`after ${wait} ms`)), wait);
    });
    const c = createOpenAIChatClient(config(bare.url, { timeout_ms: 10_000 }));
    expect((await c.chat(request)).content).toBe("after 0 ms");
    expect((await c.chat(request)).content).toBe("after 4500 ms");
  }, 15_000);

  it("stops reading when the caller aborts, and closes the connection", async () => {
    const bare = await bareServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write('{"id":');
      res.on("error", () => {});
    });
    const controller = new AbortController();
    const pending = createOpenAIChatClient(config(bare.url)).chat({ ...request, signal: controller.signal });
    while (bare.seen.requests.length === 0) await new Promise((r) => setTimeout(r, 10));
    controller.abort();
    const err = await failure(pending);
    expect(err.code).toBe("ABORTED");
    for (let i = 0; i < 100 && bare.seen.closed === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(bare.seen.closed).toBe(1);
  });

  it("hands whatever it does not send itself to fetch: a body that is not text, a scheme other than http(s)", async () => {
    const bare = await bareServer((_req, res) => res.writeHead(200, { "content-type": "text/plain" }).end("bytes"));
    const res = await transportFetch(`${bare.url}/x`, { method: "POST", body: new Uint8Array([1, 2, 3]) });
    expect(await res.text()).toBe("bytes");
    expect(bare.seen.requests[0]!.body).toBe("\u0001\u0002\u0003");
    await expect(transportFetch("data:text/plain,hello")).resolves.toSatisfy((r: Response) => r.ok);
  });

  it("answers 204 without a body, with the URL and headers fetch would give", async () => {
    const bare = await bareServer((_req, res) => res.writeHead(204, { "x-request-id": "req-9" }).end());
    const res = await transportFetch(`${bare.url}/ping`, { method: "GET" });
    expect(res.status).toBe(204);
    expect(res.body).toBeNull();
    expect(res.url).toBe(`${bare.url}/ping`);
    expect(res.headers.get("x-request-id")).toBe("req-9");
  });

  it("decodes as fetch does: a list of codings, raw deflate, a gzip cut short inside, an empty gzip, an unknown coding left as it came", async () => {
    const body = completion("decoded");
    const gz = zlib.gzipSync(body);
    const cases: [string, Buffer, string][] = [
      ["gzip, gzip", zlib.gzipSync(gz), "decoded"],
      ["deflate", zlib.deflateRawSync(body), "decoded"],
      ["gzip", gz.subarray(0, gz.length - 8), "decoded"],
    ];
    for (const [encoding, bytes, content] of cases) {
      const bare = await bareServer((_req, res) => res.writeHead(200, { "content-type": "application/json", "content-encoding": encoding }).end(bytes));
      expect((await createOpenAIChatClient(config(bare.url)).chat(request)).content).toBe(content);
    }
    const unknown = await bareServer((_req, res) => res.writeHead(200, { "content-type": "text/plain", "content-encoding": "zstd" }).end("as it came"));
    const res = await transportFetch(`${unknown.url}/x`, { method: "GET" });
    expect(await res.text()).toBe("as it came");
    expect(res.headers.get("content-encoding")).toBe("zstd");
    // A gateway's empty 401 labelled gzip keeps its status: not a connection cut short, and not retried.
    const gateway = await bareServer((_req, res) => res.writeHead(401, { "content-type": "application/json", "content-encoding": "gzip" }).end());
    const err = await failure(createOpenAIChatClient(config(gateway.url, { max_retries: 2 })).chat(request));
    expect(err.message).toMatch(/^model m: 401 /);
    expect(gateway.seen.requests).toHaveLength(1);
  });

  it("says a compressed reply cut short is cut short, and does not wait for the deadline", async () => {
    const gz = zlib.gzipSync(completion("x".repeat(100_000)));
    const bare = await bareServer((req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip", "content-length": String(gz.length) });
      res.write(gz.subarray(0, 200), () => req.socket.destroy());
    });
    const started = Date.now();
    const err = await failure(createOpenAIChatClient(config(bare.url, { timeout_ms: 20_000 })).chat(request));
    expect(err.message).toBe("model m: the connection closed before the reply was complete");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("fails a status no Response can carry in one line, and the process goes on", async () => {
    const raw = net.createServer((socket) => {
      socket.once("data", () => socket.end("HTTP/1.1 999 Request denied\r\ncontent-type: text/html\r\ncontent-length: 2\r\n\r\nno"));
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    closers.push(() => new Promise<void>((resolve) => raw.close(() => resolve())));
    const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`;
    const err = await failure(createOpenAIChatClient(config(url)).chat(request));
    expect(err.message).toBe(`model m: the server answered with status 999, which is no HTTP status (from ${url})`);
  });

  it("ends the call at once on an upgrade nobody asked for", async () => {
    const raw = net.createServer((socket) => {
      socket.once("data", () => socket.write("HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n"));
    });
    await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
    closers.push(
      () =>
        new Promise<void>((resolve) => {
          raw.close(() => resolve());
        }),
    );
    const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/v1`;
    const started = Date.now();
    const err = await failure(createOpenAIChatClient(config(url, { timeout_ms: 20_000 })).chat(request));
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("speaks HTTPS: runtime exec against a server whose certificate comes from a CA of one's own (NODE_EXTRA_CA_CERTS)", async () => {
    const dir = new URL("../server/fixtures/", import.meta.url);
    const cert = readFileSync(new URL("tls-cert.pem", dir));
    const bare = await bareServer(
      (_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(completion(reactReply("ANSWER", { answer: "over TLS" }))),
      { cert, key: readFileSync(new URL("tls-key.pem", dir)) },
    );
    const team = writeTeam(`version: 1
name: tls
models:
  default:
    provider: openai
    model: m
    base_url: ${bare.url}
    api_key: ${KEY}
    max_retries: 0
agents:
  main:
    kind: react
    model: default
`);
    const ok = await runCli(["exec", team, "hello"], { env: { NODE_EXTRA_CA_CERTS: new URL("tls-cert.pem", dir).pathname } });
    expect(ok.stdout).toContain("over TLS");
    expect(ok.code).toBe(0);
    expect(bare.seen.requests[0]!.headers["authorization"]).toBe(`Bearer ${KEY}`);
    // Without the CA, the certificate is refused, in one line that carries no key.
    const refused = await runCli(["exec", team, "hello"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("connection failed to https://127.0.0.1");
    expect(refused.stderr).not.toContain(KEY);
  });

  it("leaves a URL with credentials to fetch, which refuses it as before", async () => {
    const res = transportFetch("http://user:pw@127.0.0.1:9/v1/chat/completions", { method: "POST", body: "{}" });
    await expect(res).rejects.toThrow(/credentials/);
  });

  it("sends through fetch in a process whose environment names a proxy or RUNTIME_TRANSPORT=fetch", async () => {
    const server = await testServer({ replies: [{ content: "one" }, { content: "two" }] });
    const calls = await countingFetch(async () => {
      for (const [name, value] of [
        ["RUNTIME_TRANSPORT", "fetch"],
        ["HTTPS_PROXY", "http://127.0.0.1:9"],
      ] as const) {
        process.env[name] = value;
        // Node 20's fetch does not go through the proxy named: the call still reaches the server.
        try {
          await createOpenAIChatClient(config(server.url)).chat(request);
        } finally {
          delete process.env[name];
        }
      }
    });
    expect(calls).toBe(2);
  });

  it("leaves HTTP to fetch in a process that routes it through a proxy or a dispatcher of its own", () => {
    expect(routedElsewhere({})).toBe(false);
    expect(routedElsewhere({ RUNTIME_TRANSPORT: "fetch" })).toBe(true);
    for (const name of ["HTTPS_PROXY", "http_proxy", "ALL_PROXY"]) expect(routedElsewhere({ [name]: "http://proxy:3128" })).toBe(true);
    const slot = Symbol.for("undici.globalDispatcher.1");
    const global = globalThis as Record<symbol, unknown>;
    const before = global[slot];
    try {
      class ProxyAgent {}
      global[slot] = new ProxyAgent();
      expect(routedElsewhere({})).toBe(true);
      class Agent {}
      global[slot] = new Agent();
      expect(routedElsewhere({})).toBe(false);
    } finally {
      global[slot] = before;
    }
  });
});
