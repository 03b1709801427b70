import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startOpenAIServer, type OpenAIServer, type OpenAIServerOptions } from "../support/openai-server.js";

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(options: OpenAIServerOptions, clientOptions: { maxRetries?: number; timeout?: number } = {}) {
  server = await startOpenAIServer(options);
  const client = new OpenAI({ baseURL: server.url, apiKey: "sk-test-server", maxRetries: 0, ...clientOptions });
  return { server, client };
}

const ask = { model: "test-model", messages: [{ role: "user" as const, content: "hello there" }] };

describe("test OpenAI server", () => {
  it("answers a non-streaming completion and records the request", async () => {
    const { server, client } = await setup({ replies: [{ content: "hi!", usage: { prompt_tokens: 3, completion_tokens: 2 } }] });
    const { data, request_id } = await client.chat.completions.create(ask).withResponse();
    expect(data.choices[0]?.message.content).toBe("hi!");
    expect(data.choices[0]?.finish_reason).toBe("stop");
    expect(data.usage).toEqual({ prompt_tokens: 3, completion_tokens: 2, total_tokens: 5 });
    expect(request_id).toBe("req_1");
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]?.body?.messages).toEqual(ask.messages);
    expect(server.requests[0]?.headers["authorization"]).toBe("Bearer sk-test-server");
  });

  it("returns tool calls with object arguments encoded and string arguments verbatim", async () => {
    const { client } = await setup({
      replies: [
        {
          tool_calls: [
            { id: "c1", name: "calculator", arguments: { expression: "1+1" } },
            { name: "calculator", arguments: "{broken" },
          ],
        },
      ],
    });
    const res = await client.chat.completions.create(ask);
    const calls = res.choices[0]?.message.tool_calls ?? [];
    expect(res.choices[0]?.finish_reason).toBe("tool_calls");
    expect(calls.map((c) => (c.type === "function" ? [c.id, c.function.name, c.function.arguments] : []))).toEqual([
      ["c1", "calculator", '{"expression":"1+1"}'],
      ["call_1_2", "calculator", "{broken"],
    ]);
  });

  it("streams content in several chunks, tool-call deltas by index, and usage last", async () => {
    const { client } = await setup({
      chunk_size: 3,
      replies: [{ content: "streamed answer", tool_calls: [{ id: "t1", name: "calc", arguments: { expression: "2*3" } }] }],
    });
    const stream = await client.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
    const contentPieces: string[] = [];
    const argPieces: string[] = [];
    let usage: unknown;
    let finish: string | null = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      const choice = chunk.choices[0];
      if (!choice) continue;
      if (choice.delta.content) contentPieces.push(choice.delta.content);
      for (const d of choice.delta.tool_calls ?? []) {
        expect(d.index).toBe(0);
        if (d.function?.arguments) argPieces.push(d.function.arguments);
      }
      finish = choice.finish_reason ?? finish;
    }
    expect(contentPieces.length).toBeGreaterThan(2);
    expect(contentPieces.join("")).toBe("streamed answer");
    expect(argPieces.length).toBeGreaterThan(1);
    expect(JSON.parse(argPieces.join(""))).toEqual({ expression: "2*3" });
    expect(finish).toBe("tool_calls");
    expect(usage).toMatchObject({ total_tokens: expect.any(Number) });
  });

  it("sends no usage chunk unless include_usage is asked", async () => {
    const { client } = await setup({ replies: [{ content: "x" }] });
    const stream = await client.chat.completions.create({ ...ask, stream: true });
    for await (const chunk of stream) expect(chunk.usage ?? undefined).toBeUndefined();
  });

  it("serves 429 with retry-after, then success, through the client's retries", async () => {
    const { server, client } = await setup(
      {
        replies: [
          { status: 429, headers: { "retry-after": "0" }, error: { message: "slow down" } },
          { status: 429, headers: { "retry-after": "0" } },
          { content: "finally" },
        ],
      },
      { maxRetries: 2 },
    );
    const res = await client.chat.completions.create(ask);
    expect(res.choices[0]?.message.content).toBe("finally");
    expect(server.chatRequests).toHaveLength(3);
  });

  it("reports a 500 with its message and request id", async () => {
    const { client } = await setup({ replies: [{ status: 500, error: { message: "Internal error" } }] });
    const err = await client.chat.completions.create(ask).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const apiErr = err as InstanceType<typeof OpenAI.APIError>;
    expect(apiErr.status).toBe(500);
    expect(apiErr.message).toBe("500 Internal error");
    expect(apiErr.requestID).toBe("req_1");
  });

  it("drops the connection, and the client sees a connection error", async () => {
    const { client } = await setup({ replies: [{ drop: true }] });
    await expect(client.chat.completions.create(ask)).rejects.toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it("answers a malformed body that the client cannot parse", async () => {
    const { client } = await setup({ replies: [{ malformed: true }] });
    await expect(client.chat.completions.create(ask)).rejects.toThrow();
  });

  it("delays a reply, and an abort during the delay cancels it", async () => {
    const { client } = await setup({ replies: [{ content: "late", delay_ms: 60_000 }] });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 50);
    await expect(client.chat.completions.create(ask, { signal: controller.signal })).rejects.toBeInstanceOf(OpenAI.APIUserAbortError);
    // Ended by the abort, not by the minute's delay.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("uses respond() for dynamic replies with the request body and index", async () => {
    const { client } = await setup({
      respond: (body, index) => ({ content: `#${index} saw ${body.messages?.length} message(s)` }),
    });
    const a = await client.chat.completions.create(ask);
    const b = await client.chat.completions.create(ask);
    expect(a.choices[0]?.message.content).toBe("#0 saw 1 message(s)");
    expect(b.choices[0]?.message.content).toBe("#1 saw 1 message(s)");
  });

  it("answers 400 when the script is exhausted, and lists models", async () => {
    const { client } = await setup({ replies: [], models: ["m1", "m2"] });
    await expect(client.chat.completions.create(ask)).rejects.toThrow(/no reply scripted/);
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(["m1", "m2"]);
  });

  it("rejects a wrong API key when one is required", async () => {
    const { client } = await setup({ apiKey: "sk-right", replies: [{ content: "x" }] });
    await expect(client.chat.completions.create(ask)).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
  });

  it("can drop a stream mid-way", async () => {
    const { client } = await setup({ replies: [{ content: "a long streamed answer", drop_after_chunks: 2 }] });
    const stream = await client.chat.completions.create({ ...ask, stream: true });
    const read = async () => {
      for await (const _chunk of stream) void _chunk;
    };
    await expect(read()).rejects.toThrow();
  });
});
