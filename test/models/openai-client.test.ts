import { OPENAI_MODEL_DEFAULTS } from "../support/team.js";
import { createServer, type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { OpenAIModelConfig } from "../../src/config/types.js";
import { createOpenAIChatClient } from "../../src/models/openai-client.js";
import type { ChatRequest } from "../../src/models/types.js";
import { startOpenAIServer, type OpenAIServer, type OpenAIServerOptions } from "../support/openai-server.js";
import { failure } from "../support/failure.js";

const KEY = "sk-test-SECRET-0123456789";
let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(options: OpenAIServerOptions, overrides: Partial<OpenAIModelConfig> = {}) {
  server = await startOpenAIServer(options);
  const config: OpenAIModelConfig = {
    name: "default",
    provider: "openai",
    model: "gpt-4o-mini",
    base_url: server.url,
    api_key: KEY,
    timeout_ms: 5000,
    max_retries: 2,
    stream: false,
    ...OPENAI_MODEL_DEFAULTS,
    ...overrides,
  };
  return { server, client: createOpenAIChatClient(config) };
}

const request: ChatRequest = {
  messages: [
    { role: "user", content: "What is the area of a circle with radius 5?" },
    { role: "system", content: "You are a solver." },
    { role: "assistant", content: null, tool_calls: [{ id: "c0", name: "calculator", arguments: '{"expression":"1"}' }] },
    { role: "tool", tool_call_id: "c0", content: "1" },
  ],
  tools: [{ name: "calculator", description: "Evaluates math.", parameters: { type: "object", properties: { expression: { type: "string" } } } }],
};

describe("openai ChatClient", () => {
  it("sends messages, tools and options on the wire, and returns text with usage and request id", async () => {
    const { server, client } = await setup(
      { replies: [{ content: "78.54", usage: { prompt_tokens: 40, completion_tokens: 3 } }] },
      { temperature: 0, max_tokens: 256 },
    );
    const res = await client.chat(request);
    expect(res).toEqual({
      content: "78.54",
      tool_calls: [],
      usage: { prompt_tokens: 40, completion_tokens: 3, total_tokens: 43 },
      finish_reason: "stop",
      request_id: "req_1",
    });
    expect(client.model).toBe("gpt-4o-mini");
    const body = server.chatRequests[0]?.body;
    expect(body).toMatchObject({ model: "gpt-4o-mini", temperature: 0, max_tokens: 256 });
    expect(body?.stream).toBeUndefined();
    expect(body?.messages).toEqual([
      request.messages[0],
      request.messages[1],
      { role: "assistant", content: null, tool_calls: [{ id: "c0", type: "function", function: { name: "calculator", arguments: '{"expression":"1"}' } }] },
      request.messages[3],
    ]);
    expect(body?.tools).toEqual([{ type: "function", function: request.tools?.[0] }]);
    expect(server.chatRequests[0]?.headers["authorization"]).toBe(`Bearer ${KEY}`);
  });

  it("returns native tool calls, passing malformed arguments through as raw text", async () => {
    const { client } = await setup({
      replies: [
        {
          content: '{"thought": "compute"}',
          tool_calls: [
            { id: "call_a", name: "calculator", arguments: { expression: "pi * 5^2" } },
            { id: "call_b", name: "calculator", arguments: '{"expression": "2*pi*5"' },
          ],
        },
      ],
    });
    const res = await client.chat(request);
    expect(res.finish_reason).toBe("tool_calls");
    expect(res.tool_calls).toEqual([
      { id: "call_a", name: "calculator", arguments: '{"expression":"pi * 5^2"}' },
      { id: "call_b", name: "calculator", arguments: '{"expression": "2*pi*5"' },
    ]);
  });

  it("streams: content deltas reach onDelta, tool-call deltas are assembled, usage is counted", async () => {
    const { server, client } = await setup(
      {
        chunk_size: 5,
        replies: [
          {
            content: "Let me compute both numbers.",
            tool_calls: [
              { id: "call_1", name: "calculator", arguments: { expression: "round(pi * 5^2, 2)" } },
              { id: "call_2", name: "calculator", arguments: "{not json" },
            ],
            usage: { prompt_tokens: 11, completion_tokens: 9 },
          },
        ],
      },
      { stream: true, ...OPENAI_MODEL_DEFAULTS },
    );
    const deltas: string[] = [];
    const res = await client.chat({ ...request, onDelta: (t) => deltas.push(t) });
    expect(deltas.length).toBeGreaterThan(3);
    expect(deltas.join("")).toBe("Let me compute both numbers.");
    expect(res.content).toBe("Let me compute both numbers.");
    expect(res.tool_calls).toEqual([
      { id: "call_1", name: "calculator", arguments: '{"expression":"round(pi * 5^2, 2)"}' },
      { id: "call_2", name: "calculator", arguments: "{not json" },
    ]);
    expect(res.usage).toEqual({ prompt_tokens: 11, completion_tokens: 9, total_tokens: 20 });
    expect(res.finish_reason).toBe("tool_calls");
    expect(res.request_id).toBe("req_1");
    expect(server.chatRequests[0]?.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
  });

  it("streams a plain text answer with content null when there is none", async () => {
    const { client } = await setup({ replies: [{ tool_calls: [{ name: "terminate", arguments: {} }] }] }, { stream: true, ...OPENAI_MODEL_DEFAULTS });
    const res = await client.chat(request);
    expect(res.content).toBeNull();
    expect(res.tool_calls.map((c) => c.name)).toEqual(["terminate"]);
  });

  it("a server that answers a streamed request with the whole reply (JSON, as a proxy that does not stream): read as one", async () => {
    const whole = JSON.stringify({
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: [{ index: 0, message: { role: "assistant", content: "78.54" }, finish_reason: "stop" }],
      usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
    });
    const { server, client } = await setup({ replies: [{ raw: whole }, { raw: "[]" }] }, { stream: true, max_retries: 0 });
    const deltas: string[] = [];
    expect(await client.chat({ ...request, onDelta: (d) => deltas.push(d) })).toMatchObject({ content: "78.54", usage: { total_tokens: 7 } });
    expect(deltas).toEqual([]);
    expect(server.chatRequests[0]?.body).toMatchObject({ stream: true });
    // JSON that is no completion is what it is on a whole reply: no reply at all.
    const err = await failure(client.chat(request));
    expect(err.code).toBe("MODEL_BAD_REPLY");
    expect(err.message).toMatch(/the reply has no choices/);
  });

  it("completes after two 429s with retry-after 0 when max_retries is 2", async () => {
    const rateLimited = { status: 429, headers: { "retry-after": "0" }, error: { message: "Rate limit reached" } };
    const { server, client } = await setup({ replies: [rateLimited, rateLimited, { content: "ok" }] });
    const res = await client.chat(request);
    expect(res.content).toBe("ok");
    expect(server.chatRequests).toHaveLength(3);
  });

  it("retries a 500, and after the last attempt reports status, provider message and request id", async () => {
    const fault = { status: 500, headers: { "retry-after": "0" }, error: { message: "Internal error" } };
    const ok = await setup({ replies: [fault, { content: "recovered" }] }, { max_retries: 1 });
    expect((await ok.client.chat(request)).content).toBe("recovered");
    await ok.server.close();

    const { server, client } = await setup({ replies: [fault, fault, fault] });
    const err = await failure(client.chat(request));
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(err.message).toBe("model gpt-4o-mini: 500 Internal error (request id req_3, after 3 attempts)");
    expect(server.chatRequests).toHaveLength(3);
  });

  it("never repeats credentials written into base_url (user:password@, a query string) in its errors", async () => {
    const dead = await startOpenAIServer();
    const port = dead.port;
    await dead.close();
    const client = createOpenAIChatClient({
      name: "default",
      provider: "openai",
      model: "gpt-4o-mini",
      base_url: `http://bob:pw-Zq9-userinfo@127.0.0.1:${port}/v1?api-version=2024&key=Qx7-query-secret`,
      api_key: KEY,
      timeout_ms: 1000,
      max_retries: 0,
      stream: false,
      ...OPENAI_MODEL_DEFAULTS,
    });
    const err = await failure(client.chat(request));
    expect(err.message).toBe(`model gpt-4o-mini: connection failed to http://127.0.0.1:${port}/v1 (ECONNREFUSED) after 1 attempt`);
  });

  it("says why a connection failed: a server that resets every connection", async () => {
    const resetter = createServer((socket) => socket.resetAndDestroy());
    await new Promise<void>((resolve) => resetter.listen(0, "127.0.0.1", resolve));
    const { port } = resetter.address() as AddressInfo;
    try {
      const client = createOpenAIChatClient({
        name: "default",
        provider: "openai",
        model: "gpt-4o-mini",
        base_url: `http://127.0.0.1:${port}/v1`,
        api_key: KEY,
        timeout_ms: 5000,
        max_retries: 1,
        stream: false,
        ...OPENAI_MODEL_DEFAULTS,
      });
      const err = await failure(client.chat(request));
      expect(err.message).toMatch(
        new RegExp(`^model gpt-4o-mini: connection failed to http://127\\.0\\.0\\.1:${port}/v1 \\((ECONNRESET|UND_ERR_SOCKET)\\) after 2 attempts$`),
      );
    } finally {
      await new Promise((resolve) => resetter.close(resolve));
    }
  });

  it("fails on a dead endpoint with MODEL_UNAVAILABLE in bounded time, one line, no key", async () => {
    const dead = await startOpenAIServer();
    const url = dead.url;
    await dead.close();
    const client = createOpenAIChatClient({
      name: "default",
      provider: "openai",
      model: "gpt-4o-mini",
      base_url: url,
      api_key: KEY,
      timeout_ms: 5000,
      max_retries: 2,
      stream: false,
      ...OPENAI_MODEL_DEFAULTS,
    });
    const started = Date.now();
    const err = await failure(client.chat(request));
    // A refused connection fails at once (three attempts, no waiting for the 5 s timeout each): a bound well under 3 x 5 s.
    expect(Date.now() - started).toBeLessThan(12_000);
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(err.message).toBe(`model gpt-4o-mini: connection failed to ${url} (ECONNREFUSED) after 3 attempts`);
    expect(err.message).not.toContain(KEY);
    expect(err.message).not.toContain("\n");
  });

  it("reports a timeout with the limit it hit", async () => {
    const { client } = await setup({ replies: [{ content: "late", delay_ms: 60_000 }] }, { timeout_ms: 200, max_retries: 0 });
    const started = Date.now();
    const err = await failure(client.chat(request));
    // Ended by timeout_ms (the message says which limit), not by the minute's delay.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(err.message).toMatch(
      /^model gpt-4o-mini: no complete reply within 200 ms \(timeout_ms\) from http:\/\/127\.0\.0\.1:\d+\/v1, while waiting for the reply$/,
    );
  });

  it("aborts an in-flight request through the signal, and refuses an already aborted one", async () => {
    const { server, client } = await setup({ replies: [{ content: "late", delay_ms: 60_000 }] });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const err = await failure(client.chat({ ...request, signal: controller.signal }));
    expect(err.code).toBe("ABORTED");
    // Ended by the abort, not by the minute's delay.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(server.chatRequests).toHaveLength(1);

    const again = await failure(client.chat({ ...request, signal: controller.signal }));
    expect(again.code).toBe("ABORTED");
    expect(server.chatRequests).toHaveLength(1);
  });

  it("aborts a stream in the middle", async () => {
    const { client } = await setup(
      { chunk_size: 1, replies: [{ content: "a rather long streamed reply", drop_after_chunks: 5 }] },
      { stream: true, max_retries: 0 },
    );
    const controller = new AbortController();
    const err = await failure(client.chat({ ...request, signal: controller.signal, onDelta: () => controller.abort() }));
    expect(err.code).toBe("ABORTED");
  });

  it("never lets the API key into an error message, even when the provider echoes it", async () => {
    const { client } = await setup({
      replies: [{ status: 401, error: { message: `Incorrect API key provided: ${KEY}. You can find your key at https://x` } }],
    });
    const err = await failure(client.chat(request));
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(err.message).toMatch(/^model gpt-4o-mini: 401 Incorrect API key provided: \S+\. You can find/);
    expect(err.message).toContain("(request id req_1)");
    expect(err.message).not.toContain(KEY);
    expect(err.message).not.toContain("SECRET");
    expect(JSON.stringify(err)).not.toContain(KEY);
    expect(err.cause).toBeUndefined();
  });

  it("turns an unparsable reply into MODEL_BAD_REPLY", async () => {
    const { client } = await setup({ replies: [{ malformed: true }] });
    const err = await failure(client.chat(request));
    expect(err.code).toBe("MODEL_BAD_REPLY");
    expect(err.message).toBe("model gpt-4o-mini: the reply is not valid JSON");
  });

  it("hints at base_url when the endpoint is not a Chat Completions API (a 404 page, a 200 HTML page)", async () => {
    const notFound = await setup({ replies: [{ raw: "<html>Not Found</html>", status: 404, content_type: "text/html" }] }, { max_retries: 0 });
    const err404 = await failure(notFound.client.chat(request));
    expect(err404.message).toBe(
      `model gpt-4o-mini: 404 <html>Not Found</html> (request id req_1); is base_url right? ${notFound.server.url}/chat/completions was not found`,
    );
    await server?.close();
    const html = await setup({ replies: [{ raw: "<html>a web page</html>", status: 200, content_type: "text/html" }] }, { max_retries: 0 });
    const errHtml = await failure(html.client.chat(request));
    expect(errHtml.code).toBe("MODEL_BAD_REPLY");
    expect(errHtml.message).toBe(`model gpt-4o-mini: the reply is not a chat completion (request id req_1); is base_url right? (${html.server.url})`);
  });

  it("reports a stream that breaks off as MODEL_UNAVAILABLE", async () => {
    const { client } = await setup({ replies: [{ content: "a streamed reply cut short", drop_after_chunks: 3 }] }, { stream: true, max_retries: 0 });
    const err = await failure(client.chat(request));
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(err.message).toBe("model gpt-4o-mini: the reply stream broke off (other side closed) (request id req_1)");
    expect(err.message).not.toContain("\n");
  });

  describe("environment fallback", () => {
    const saved = { key: process.env["OPENAI_API_KEY"], url: process.env["OPENAI_BASE_URL"] };
    afterEach(() => {
      for (const [name, value] of [
        ["OPENAI_API_KEY", saved.key],
        ["OPENAI_BASE_URL", saved.url],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    });

    it("uses OPENAI_BASE_URL and OPENAI_API_KEY when the team file has none", async () => {
      server = await startOpenAIServer({ apiKey: "sk-from-env", replies: [{ content: "via env" }] });
      process.env["OPENAI_BASE_URL"] = server.url;
      process.env["OPENAI_API_KEY"] = "sk-from-env";
      const client = createOpenAIChatClient({
        name: "d",
        provider: "openai",
        model: "m",
        timeout_ms: 2000,
        max_retries: 0,
        stream: false,
        ...OPENAI_MODEL_DEFAULTS,
      });
      expect((await client.chat(request)).content).toBe("via env");
    });

    it("fails clearly when there is no key anywhere", async () => {
      delete process.env["OPENAI_API_KEY"];
      const client = createOpenAIChatClient({
        name: "d",
        provider: "openai",
        model: "m",
        api_key: "",
        timeout_ms: 2000,
        max_retries: 0,
        stream: false,
        ...OPENAI_MODEL_DEFAULTS,
      });
      const err = await failure(client.chat(request));
      expect(err.code).toBe("MODEL_UNAVAILABLE");
      expect(err.message).toBe("model m: no API key: set api_key in the team file or OPENAI_API_KEY");
    });
  });
});

describe("the token limit's field", () => {
  it.each([
    { model: "gpt-4o-mini", forced: undefined, field: "max_tokens" },
    { model: "o3-mini", forced: undefined, field: "max_completion_tokens" },
    { model: "gpt-5", forced: undefined, field: "max_completion_tokens" },
    { model: "openai/gpt-5-mini", forced: undefined, field: "max_completion_tokens" },
    { model: "my-o3-deployment", forced: "max_completion_tokens", field: "max_completion_tokens" },
    { model: "gpt-5-compatible-proxy", forced: "max_tokens", field: "max_tokens" },
  ] as const)("$model (max_tokens_param: $forced) sends $field, which a strict server takes", async ({ model, forced, field }) => {
    const { server, client } = await setup(
      { strict: !forced, replies: [{ content: "ok" }] },
      { model, max_tokens: 300, ...(forced ? { max_tokens_param: forced } : {}) },
    );
    const res = await client.chat({ messages: [{ role: "user", content: "hi" }] });
    expect(res.content).toBe("ok");
    const body = server.chatRequests[0]?.body ?? {};
    expect(body[field]).toBe(300);
    expect(Object.keys(body).filter((k) => k.startsWith("max_"))).toEqual([field]);
  });
});
