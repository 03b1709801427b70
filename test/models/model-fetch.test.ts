/**
 * The model client's HTTP (docs/model-servers.md#the-transport): undici's `fetch`
 * on one dispatcher per process, through the real `openai` client against
 * servers on 127.0.0.1: the project's test server, and bare `node:http`
 * servers for what it does not do (compression, redirects, huge replies,
 * replies cut short, a proxy).
 */
import { readFileSync } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import * as net from "node:net";
import type { AddressInfo } from "node:net";
import * as zlib from "node:zlib";
import { afterEach, describe, expect, it } from "vitest";
import type { OpenAIModelConfig } from "../../src/config/types.js";
import { MAX_REPLY_BYTES } from "../../src/models/model-fetch.js";
import { createOpenAIChatClient } from "../../src/models/openai-client.js";
import type { ChatRequest } from "../../src/models/types.js";
import { runCli } from "../support/cli.js";
import { failure } from "../support/failure.js";
import { startOpenAIServer } from "../support/openai-server.js";
import { OPENAI_MODEL_DEFAULTS, reactReply, writeTeam } from "../support/team.js";

const KEY = "sk-transport-SECRET-7654321";
const request: ChatRequest = { messages: [{ role: "user", content: "hi" }] };
const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

function config(baseURL: string, overrides: Partial<OpenAIModelConfig> = {}): OpenAIModelConfig {
  return {
    name: "default",
    provider: "openai",
    model: "m",
    base_url: baseURL,
    api_key: KEY,
    timeout_ms: 5000,
    max_retries: 0,
    stream: false,
    ...OPENAI_MODEL_DEFAULTS,
    ...overrides,
  };
}

/** Listens on 127.0.0.1 and closes after the test. */
async function listen<T extends net.Server>(server: T): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        if (server instanceof http.Server) server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
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
  const port = await listen(server);
  return { url: `${tls ? "https" : "http"}://127.0.0.1:${port}/v1`, seen };
}

const completion = (content: string) =>
  JSON.stringify({
    id: "c1",
    object: "chat.completion",
    created: 1,
    model: "m",
    choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  });

/** The same reply as an event stream, as a team's model asks for it by default (`stream: true`). */
const streamed = (content: string) => {
  const chunks = [
    { id: "c1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { role: "assistant", content }, finish_reason: null }] },
    { id: "c1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] },
  ];
  return `${chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`).join("")}data: [DONE]\n\n`;
};
const SSE = { "content-type": "text/event-stream" };

/** Writes `total` bytes of `chunk`s, minding back-pressure, then ends. */
function writeMany(res: http.ServerResponse, chunk: Buffer, total: number): void {
  let sent = 0;
  const more = (): void => {
    while (sent < total) {
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
}

const answerTeam = (url: string) =>
  writeTeam(`version: 1
name: transport
models:
  default:
    provider: openai
    model: m
    base_url: ${url}
    api_key: ${KEY}
    max_retries: 0
agents:
  main:
    kind: react
    model: default
`);

describe("the model client's HTTP", () => {
  it("sends the request with the key, a JSON body and its length, and keeps its connections for the calls after", async () => {
    const server = await startOpenAIServer({ replies: [{ content: "one" }, { content: "two" }] });
    closers.push(() => server.close());
    const c = createOpenAIChatClient(config(server.url));
    expect((await c.chat(request)).content).toBe("one");
    expect((await c.chat(request)).content).toBe("two");
    const [first] = server.chatRequests;
    expect(first!.headers["authorization"]).toBe(`Bearer ${KEY}`);
    expect(first!.headers["content-type"]).toBe("application/json");
    expect(first!.body).toMatchObject({ model: "m", messages: [{ role: "user", content: "hi" }] });

    const bare = await bareServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(completion("ok")));
    const b = createOpenAIChatClient(config(bare.url));
    for (let i = 0; i < 5; i++) expect((await b.chat(request)).content).toBe("ok");
    // Kept alive: undici's pool may open a second connection while the first goes back to it, no more.
    expect(bare.seen.connections).toBeLessThanOrEqual(2);
    // A length, not a chunked body: some servers refuse chunked requests.
    expect(bare.seen.requests[0]!.headers["content-length"]).toBe(String(Buffer.byteLength(bare.seen.requests[0]!.body)));
    expect(bare.seen.requests[0]!.headers["transfer-encoding"]).toBeUndefined();
  });

  for (const [encoding, compress] of [
    ["gzip", zlib.gzipSync],
    ["deflate", zlib.deflateSync],
    ["br", zlib.brotliCompressSync],
  ] as const) {
    it(`reads a reply the server compressed with ${encoding}`, async () => {
      const bare = await bareServer((_req, res) =>
        res.writeHead(200, { "content-type": "application/json", "content-encoding": encoding }).end(compress(completion("squeezed é"))),
      );
      const reply = await createOpenAIChatClient(config(bare.url)).chat(request);
      expect(reply.content).toBe("squeezed é");
    });
  }

  it("decodes as fetch does: a list of codings, a gzip cut short inside; an empty gzip-labelled 401 keeps its status and is not retried", async () => {
    const gz = zlib.gzipSync(completion("decoded"));
    for (const [encoding, bytes] of [
      ["gzip, gzip", zlib.gzipSync(gz)],
      ["gzip", gz.subarray(0, gz.length - 8)],
    ] as const) {
      const bare = await bareServer((_req, res) => res.writeHead(200, { "content-type": "application/json", "content-encoding": encoding }).end(bytes));
      expect((await createOpenAIChatClient(config(bare.url)).chat(request)).content).toBe("decoded");
    }
    const gateway = await bareServer((_req, res) => res.writeHead(401, { "content-type": "application/json", "content-encoding": "gzip" }).end());
    const err = await failure(createOpenAIChatClient(config(gateway.url, { max_retries: 2 })).chat(request));
    expect(err.message).toMatch(/^model m: 401 /);
    expect(gateway.seen.requests).toHaveLength(1);
  });

  it(`fails a reply larger than ${MAX_REPLY_BYTES / 1024 / 1024} MiB in one line, without asking again`, async () => {
    const bare = await bareServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      writeMany(res, Buffer.alloc(1024 * 1024, 0x61), MAX_REPLY_BYTES + 1024 * 1024);
    });
    const err = await failure(createOpenAIChatClient(config(bare.url, { max_retries: 2, timeout_ms: 20_000 })).chat(request));
    expect(err.code).toBe("MODEL_BAD_REPLY");
    expect(err.message).toBe(`model m: the reply is larger than 64 MiB (from ${bare.url}); is base_url right?`);
    expect(bare.seen.requests).toHaveLength(1);
  }, 30_000);

  it("counts a compressed reply once decoded: a small gzip that decodes past the cap fails the same way, streamed or not", async () => {
    // Events of an event stream's comments, which a client reads without piling them up.
    const line = `: ${"x".repeat(1020)}\n\n`;
    const bomb = zlib.gzipSync(line.repeat(MAX_REPLY_BYTES / line.length + 1));
    expect(bomb.length).toBeLessThan(1024 * 1024);
    for (const [stream, type] of [
      [false, "application/json"],
      [true, "text/event-stream"],
    ] as const) {
      const bare = await bareServer((_req, res) => res.writeHead(200, { "content-type": type, "content-encoding": "gzip" }).end(bomb));
      const err = await failure(createOpenAIChatClient(config(bare.url, { max_retries: 2, stream, timeout_ms: 20_000 })).chat(request));
      expect(err.code).toBe("MODEL_BAD_REPLY");
      expect(err.message).toBe(`model m: the reply is larger than 64 MiB (from ${bare.url}); is base_url right?`);
      expect(bare.seen.requests).toHaveLength(1);
    }
  }, 30_000);

  it("does not follow a redirect: the failure says where it points, once, in one line", async () => {
    const bare = await bareServer((req, res) => res.writeHead(307, { location: req.url!.replace("/v1/", "/v2/") }).end());
    const err = await failure(createOpenAIChatClient(config(bare.url, { max_retries: 2 })).chat(request));
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(err.message).toBe(
      `model m: the server redirects to ${bare.url.replace("/v1", "/v2")}/chat/completions (status 307), which is not followed; is base_url right?`,
    );
    expect(bare.seen.requests.map((r) => r.url)).toEqual(["/v1/chat/completions"]);
  });

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
    // Every connection closes: the one that carried the request, and the idle one undici's pool may open meanwhile.
    for (let i = 0; i < 500 && (bare.seen.closed === 0 || bare.seen.closed < bare.seen.connections); i++) await new Promise((r) => setTimeout(r, 10));
    expect(bare.seen.closed).toBeGreaterThanOrEqual(1);
    expect(bare.seen.closed).toBe(bare.seen.connections);
  });

  it("says a reply cut short is cut short, plain or compressed, and does not wait for the deadline", async () => {
    const gz = zlib.gzipSync(completion("x".repeat(100_000)));
    for (const [headers, bytes] of [
      [{ "content-length": "1000" }, Buffer.from('{"id":"c1","object":')],
      [{ "content-encoding": "gzip", "content-length": String(gz.length) }, gz.subarray(0, 200)],
    ] as const) {
      const bare = await bareServer((req, res) => {
        res.writeHead(200, { "content-type": "application/json", ...headers });
        res.write(bytes, () => req.socket.destroy());
      });
      const started = Date.now();
      const err = await failure(createOpenAIChatClient(config(bare.url, { timeout_ms: 20_000 })).chat(request));
      expect(err.message).toBe("model m: the connection closed before the reply was complete");
      expect(Date.now() - started).toBeLessThan(5_000);
    }
  });

  it("fails a status outside HTTP's in one line, and an upgrade nobody asked for at once", async () => {
    const raw = net.createServer((socket) => {
      socket.once("data", () => socket.end("HTTP/1.1 999 Request denied\r\ncontent-type: text/html\r\ncontent-length: 2\r\n\r\nno"));
    });
    const url = `http://127.0.0.1:${await listen(raw)}/v1`;
    const err = await failure(createOpenAIChatClient(config(url)).chat(request));
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(err.message).toBe(`model m: the server answered with status 999, which is no HTTP status (from ${url})`);

    const upgrade = net.createServer((socket) => {
      socket.once("data", () => socket.write("HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: upgrade\r\n\r\n"));
    });
    const upgradeURL = `http://127.0.0.1:${await listen(upgrade)}/v1`;
    const started = Date.now();
    const refused = await failure(createOpenAIChatClient(config(upgradeURL, { timeout_ms: 20_000 })).chat(request));
    expect(refused.message).toBe("model m: the connection closed before the reply was complete");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it("refuses a base_url with credentials, as fetch does, without the key or the password in the message", async () => {
    const err = await failure(createOpenAIChatClient(config("http://user:pw@127.0.0.1:9/v1")).chat(request));
    expect(err.message).not.toContain("pw");
    expect(err.message).not.toContain(KEY);
  });

  it("goes through the proxy the environment names (runtime exec with HTTP_PROXY), and straight to the server with NO_PROXY", async () => {
    const bare = await bareServer((_req, res) => res.writeHead(200, SSE).end(streamed(reactReply("ANSWER", { answer: "proxied" }))));
    const tunnels: string[] = [];
    const proxy = http.createServer((_req, res) => res.writeHead(405).end());
    proxy.on("connect", (req: http.IncomingMessage, client: net.Socket, head: Buffer) => {
      tunnels.push(req.url ?? "");
      const [host, port] = (req.url ?? "").split(":");
      const upstream = net.connect(Number(port), host, () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    });
    const proxyURL = `http://127.0.0.1:${await listen(proxy)}`;
    const team = answerTeam(bare.url);
    const proxied = await runCli(["exec", team, "hello"], { env: { HTTP_PROXY: proxyURL, NO_PROXY: undefined, no_proxy: undefined } });
    expect(proxied.stdout).toContain("proxied");
    expect(proxied.code).toBe(0);
    expect(tunnels).toEqual([new URL(bare.url).host]);
    const direct = await runCli(["exec", team, "hello"], { env: { HTTP_PROXY: proxyURL, NO_PROXY: "127.0.0.1" } });
    expect(direct.code).toBe(0);
    expect(tunnels).toHaveLength(1);
    expect(bare.seen.requests).toHaveLength(2);
  });

  it("speaks HTTPS: runtime exec against a server whose certificate comes from a CA of one's own (NODE_EXTRA_CA_CERTS)", async () => {
    const dir = new URL("../server/fixtures/", import.meta.url);
    const cert = readFileSync(new URL("tls-cert.pem", dir));
    const bare = await bareServer((_req, res) => res.writeHead(200, SSE).end(streamed(reactReply("ANSWER", { answer: "over TLS" }))), {
      cert,
      key: readFileSync(new URL("tls-key.pem", dir)),
    });
    const team = answerTeam(bare.url);
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
});
