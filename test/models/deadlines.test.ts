/**
 * Deadlines that hold and failures that say what happened (docs/model-servers.md),
 * through the real `openai` client against the test server, and through
 * `runtime exec` as a user runs it.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { OpenAIModelConfig } from "../../src/config/types.js";
import type { RuntimeError } from "../../src/errors.js";
import { createOpenAIChatClient } from "../../src/models/openai-client.js";
import type { ChatRequest } from "../../src/models/types.js";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer, type OpenAIServerOptions } from "../support/openai-server.js";
import { OPENAI_MODEL_DEFAULTS, reactReply, writeTeam } from "../support/team.js";
import { failure } from "../support/failure.js";

const KEY = "sk-deadline-SECRET-1234567";
const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function client(options: OpenAIServerOptions, overrides: Partial<OpenAIModelConfig> = {}) {
  const server = await startOpenAIServer(options);
  servers.push(server);
  const config: OpenAIModelConfig = {
    name: "default",
    provider: "openai",
    model: "m",
    base_url: server.url,
    api_key: KEY,
    timeout_ms: 1000,
    max_retries: 0,
    stream: false,
    ...OPENAI_MODEL_DEFAULTS,
    ...overrides,
  };
  return { server, client: createOpenAIChatClient(config) };
}

const request: ChatRequest = { messages: [{ role: "user", content: "hi" }] };

/** Resolves with how long `p` took to settle, in ms, and its error. */
async function timed(p: Promise<unknown>): Promise<{ ms: number; err: RuntimeError }> {
  const started = Date.now();
  const err = await failure(p);
  return { ms: Date.now() - started, err };
}

describe("deadlines", () => {
  for (const stream of [false, true]) {
    it(`ends a ${stream ? "stream" : "body"} that stalls after the headers within timeout_ms`, async () => {
      const { client: c } = await client(
        { replies: [{ content: "x".repeat(400), stall_after_chunks: 3 }] },
        { stream, timeout_ms: 600, idle_timeout_ms: 5000 },
      );
      const { ms, err } = await timed(c.chat(request));
      // The message names the limit that fired; the bound only catches a hang.
      expect(ms).toBeGreaterThanOrEqual(550);
      expect(ms).toBeLessThan(20_000);
      expect(err.code).toBe("MODEL_UNAVAILABLE");
      expect(err.message).toMatch(/^model m: no complete reply within 600 ms \(timeout_ms\) from http:\/\/127\.0\.0\.1:\d+\/v1, while /);
      expect(err.message).toMatch(stream ? /reading the reply stream/ : /waiting for the reply/);
    });

    it(`ends a ${stream ? "stream" : "body"} that drips within timeout_ms`, async () => {
      const { client: c } = await client({ replies: [{ content: "y".repeat(200), drip_ms: 200 }] }, { stream, timeout_ms: 700 });
      const { ms, err } = await timed(c.chat(request));
      expect(ms).toBeLessThan(20_000);
      expect(err.message).toMatch(/no complete reply within 700 ms/);
    });
  }

  it("ends a stream silent for idle_timeout_ms, saying how far it got", async () => {
    const { client: c } = await client(
      { replies: [{ content: "z".repeat(100), stall_after_chunks: 4 }] },
      { stream: true, timeout_ms: 10_000, idle_timeout_ms: 300 },
    );
    const { ms, err } = await timed(c.chat(request));
    expect(ms).toBeLessThan(20_000);
    expect(err.message).toMatch(/^model m: the reply stream stalled: no chunk for 300 ms after \d+ chunk\(s\)$/);
  });

  it("includes the retries in the deadline: no retry that cannot finish in time", async () => {
    const { server, client: c } = await client({ replies: [{ status: 503 }, { status: 503 }, { status: 503 }] }, { timeout_ms: 400, max_retries: 5 });
    const { ms, err } = await timed(c.chat(request));
    expect(ms).toBeLessThan(20_000);
    expect(err.message).toMatch(/^model m: 503 status 503 .*no time left for a retry within timeout_ms \(400 ms\)$/);
    expect(server.chatRequests.length).toBeLessThan(3);
  });
});

describe("retry-after", () => {
  it("obeys a short retry-after", async () => {
    const { server, client: c } = await client(
      { replies: [{ status: 429, headers: { "retry-after": "0.2" } }, { content: "ok" }] },
      { max_retries: 1, timeout_ms: 5000 },
    );
    const reply = await c.chat(request);
    expect(reply.content).toBe("ok");
    const [first, second] = server.chatRequests;
    expect(second!.time - first!.time).toBeGreaterThanOrEqual(180);
  });

  it("fails at once on a retry-after past max_retry_wait_ms, saying so", async () => {
    const { server, client: c } = await client({ replies: [{ status: 429, headers: { "retry-after": "86400" } }] }, { max_retries: 2, timeout_ms: 60_000 });
    const { ms, err } = await timed(c.chat(request));
    // At once: the alternative is waiting a day.
    expect(ms).toBeLessThan(20_000);
    expect(server.chatRequests).toHaveLength(1);
    expect(err.message).toMatch(
      /^model m: 429 status 429 \(request id req_1\); the server asks to retry after 86400 s, longer than max_retry_wait_ms \(30 s\)$/,
    );
  });
});

describe("replies that are not replies", () => {
  for (const stream of [false, true]) {
    it(`an HTML page (${stream ? "streamed" : "plain"}) fails at the first request with the real cause`, async () => {
      const { server, client: c } = await client({ replies: [{ html: true }] }, { stream, max_retries: 2 });
      const err = await failure(c.chat(request));
      expect(err.code).toBe("MODEL_BAD_REPLY");
      expect(err.message).toMatch(stream ? /the reply is not an event stream \(content-type text\/html/ : /the reply is not a chat completion/);
      expect(err.message).toMatch(/is base_url right\?/);
      expect(server.chatRequests).toHaveLength(1);
    });

    it(`a reply with no choices (${stream ? "streamed" : "plain"}) fails at the first request`, async () => {
      const { client: c } = await client({ replies: [{ empty_stream: true }] }, { stream });
      const err = await failure(c.chat(request));
      expect(err.code).toBe("MODEL_BAD_REPLY");
      expect(err.message).toMatch(stream ? /the reply stream carried \d+ chunk\(s\) and no choices/ : /the reply has no choices/);
    });
  }

  it("a connection reset mid-body says so instead of 'terminated', after its retries", async () => {
    const { server, client: c } = await client(
      {
        replies: [
          { content: "a".repeat(500), reset_mid_body: true },
          { content: "b".repeat(500), reset_mid_body: true },
        ],
      },
      { max_retries: 1, timeout_ms: 5000 },
    );
    const err = await failure(c.chat(request));
    expect(server.chatRequests).toHaveLength(2);
    expect(err.message).toBe("model m: the connection closed before the reply was complete after 2 attempts");
  });
});

describe("model options", () => {
  it("sends top_p, seed, max_tokens, headers and extra_body; the runtime's own fields win", async () => {
    const { server, client: c } = await client(
      { replies: [{ content: "ok" }] },
      {
        top_p: 0.5,
        seed: 7,
        max_tokens: 64,
        headers: { "HTTP-Referer": "https://example.com" },
        extra_body: { chat_template_kwargs: { enable_thinking: false }, model: "hijack" },
      },
    );
    await c.chat(request);
    const [sent] = server.chatRequests;
    expect(sent!.body).toMatchObject({ model: "m", top_p: 0.5, seed: 7, max_tokens: 64, chat_template_kwargs: { enable_thinking: false } });
    expect(sent!.headers["http-referer"]).toBe("https://example.com");
  });
});

describe("runtime exec against a stalled server", () => {
  it("exits 1 within timeout_ms plus a margin, with one clear line", async () => {
    const server = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "late" }), stall_after_chunks: 2 }) });
    servers.push(server);
    const team = writeTeam(`version: 1
name: stalled
models:
  default:
    provider: openai
    model: m
    base_url: ${server.url}
    api_key: ${KEY}
    stream: true
    timeout_ms: 800
agents:
  solver:
    kind: react
`);
    const started = Date.now();
    const run = await runCli(["exec", team, "hello", "--trace-dir", `${team}.traces`]);
    const ms = Date.now() - started;
    expect(run.code).toBe(1);
    // The message names timeout_ms; the bound only catches a hang (the server stalls for ever).
    expect(ms).toBeLessThan(20_000);
    expect(run.stderr).toMatch(/run failed: .*model m: no complete reply within 800 ms \(timeout_ms\)/);
    expect(run.stderr).not.toContain(KEY);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  });
});
