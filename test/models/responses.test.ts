/**
 * `api: responses` (docs/model-servers.md#the-responses-api): the ChatClient
 * over the Responses API, through the real `openai` client over HTTP to the
 * test server, which answers in OpenAI's wire shape and, strict, refuses
 * what OpenAI refuses (Chat Completions' fields, reasoning items it never
 * issued, tool outputs without their call).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { OpenAIModelConfig } from "../../src/config/types.js";
import { createOpenAIChatClient } from "../../src/models/openai-client.js";
import type { ChatRequest } from "../../src/models/types.js";
import { failure } from "../support/failure.js";
import { type OpenAIServer, type OpenAIServerOptions, startOpenAIServer } from "../support/openai-server.js";
import { encryptReasoning } from "../support/openai-server-responses.js";
import { OPENAI_MODEL_DEFAULTS } from "../support/team.js";

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(options: OpenAIServerOptions, overrides: Partial<OpenAIModelConfig> = {}) {
  server = await startOpenAIServer({ strict: true, ...options });
  const config: OpenAIModelConfig = {
    name: "default",
    provider: "openai",
    model: "gpt-5-mini",
    base_url: server.url,
    api_key: "sk-responses-0123456789",
    timeout_ms: 5000,
    max_retries: 2,
    stream: false,
    ...OPENAI_MODEL_DEFAULTS,
    api: "responses",
    ...overrides,
  };
  return { server, client: createOpenAIChatClient(config) };
}

const CALC = { name: "calculator", description: "Evaluates math.", parameters: { type: "object", properties: { expression: { type: "string" } } } };

const firstTurn: ChatRequest = {
  messages: [
    { role: "user", content: "What is the area of a circle with radius 5?" },
    { role: "system", content: "You are a solver." },
  ],
  tools: [CALC],
};

const REASONING = "The area is pi r squared; I compute it with the calculator.";

describe("the Responses API", () => {
  it("sends input items, function tools, store: false and max_output_tokens; reads the reply with its reasoning items and usage", async () => {
    const { server, client } = await setup(
      {
        replies: [
          {
            content: "I compute.",
            reasoning: REASONING,
            tool_calls: [{ id: "call_a", name: "calculator", arguments: { expression: "pi * 5^2" } }],
            usage: { prompt_tokens: 50, cached_tokens: 32, completion_tokens: 20, reasoning_tokens: 12 },
          },
        ],
      },
      { max_tokens: 400, temperature: 1, seed: 7 },
    );
    const res = await client.chat(firstTurn);
    expect(res).toEqual({
      content: "I compute.",
      tool_calls: [{ id: "call_a", name: "calculator", arguments: '{"expression":"pi * 5^2"}' }],
      usage: { prompt_tokens: 50, completion_tokens: 20, total_tokens: 70, cached_tokens: 32, reasoning_tokens: 12 },
      finish_reason: "tool_calls",
      reasoning: REASONING,
      request_id: "req_1",
      reasoning_items: [
        { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: REASONING }], encrypted_content: encryptReasoning("rs_1", REASONING) },
      ],
    });
    expect(server.chatRequests).toEqual([]);
    const body = server.responsesRequests[0]?.body ?? {};
    expect(body).toEqual({
      model: "gpt-5-mini",
      input: [
        { type: "message", role: "user", content: "What is the area of a circle with radius 5?" },
        { type: "message", role: "system", content: "You are a solver." },
      ],
      store: false,
      include: ["reasoning.encrypted_content"],
      tools: [{ type: "function", ...CALC, strict: false }],
      temperature: 1,
      max_output_tokens: 400,
    });
  });

  it("carries the reasoning items back before their reply, tool calls as function_call and results as function_call_output", async () => {
    const { server, client } = await setup({
      replies: [
        { content: null, reasoning: REASONING, tool_calls: [{ id: "call_a", name: "calculator", arguments: { expression: "pi * 5^2" } }] },
        { content: "The area is 78.54." },
      ],
    });
    const first = await client.chat(firstTurn);
    const second = await client.chat({
      ...firstTurn,
      messages: [
        ...firstTurn.messages,
        {
          role: "assistant",
          content: first.content,
          tool_calls: first.tool_calls,
          ...(first.reasoning_items ? { reasoning_items: first.reasoning_items } : {}),
        },
        { role: "tool", tool_call_id: "call_a", content: "78.54" },
      ],
    });
    expect(second.content).toBe("The area is 78.54.");
    expect(second.reasoning_items).toBeUndefined();
    // The strict server took the request: the reasoning item is one it issued.
    expect(server.responsesRequests[1]?.body?.["input"]).toEqual([
      { type: "message", role: "user", content: "What is the area of a circle with radius 5?" },
      { type: "message", role: "system", content: "You are a solver." },
      { type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: REASONING }], encrypted_content: encryptReasoning("rs_1", REASONING) },
      { type: "function_call", call_id: "call_a", name: "calculator", arguments: '{"expression":"pi * 5^2"}' },
      { type: "function_call_output", call_id: "call_a", output: "78.54" },
    ]);
  });

  it("a reasoning item the server never issued is refused, as OpenAI refuses it with store: false", async () => {
    const { client } = await setup({ replies: [{ content: "never" }] }, { max_retries: 0 });
    const forged = { type: "reasoning" as const, id: "rs_x", summary: [], encrypted_content: "bm90IG1pbmU=" };
    const err = await failure(
      client.chat({
        messages: [
          { role: "user", content: "hi" },
          { role: "assistant", content: "hello", reasoning_items: [forged] },
          { role: "user", content: "again" },
        ],
      }),
    );
    expect(err.message).toMatch(/400 Item with id 'rs_x' not found/);
  });

  it("streams: output_text deltas reach onDelta, the completed response gives calls, reasoning and usage", async () => {
    const { server, client } = await setup(
      {
        replies: [
          {
            content: "Computing the area now.",
            reasoning: REASONING,
            tool_calls: [{ id: "call_s", name: "calculator", arguments: { expression: "pi * 25" } }],
            usage: { prompt_tokens: 40, completion_tokens: 30, reasoning_tokens: 10 },
          },
        ],
        chunk_size: 5,
      },
      { stream: true },
    );
    const deltas: string[] = [];
    const res = await client.chat({ ...firstTurn, onDelta: (d) => deltas.push(d) });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe("Computing the area now.");
    expect(res).toMatchObject({
      content: "Computing the area now.",
      tool_calls: [{ id: "call_s", name: "calculator", arguments: '{"expression":"pi * 25"}' }],
      usage: { prompt_tokens: 40, completion_tokens: 30, total_tokens: 70, reasoning_tokens: 10 },
      finish_reason: "tool_calls",
      reasoning: REASONING,
    });
    expect(res.reasoning_items).toHaveLength(1);
    expect(server.responsesRequests[0]?.body?.["stream"]).toBe(true);
  });

  it("an incomplete response (max_output_tokens) is a cut-off reply, streamed or not", async () => {
    for (const stream of [false, true]) {
      const { client } = await setup({ replies: [{ content: '{"observe": "The answer', finish_reason: "length" }] }, { stream });
      const res = await client.chat(firstTurn);
      expect(res).toMatchObject({ content: '{"observe": "The answer', finish_reason: "length" });
      await server?.close();
    }
  });

  it("a server that answers a streamed request with the whole response (JSON): read as one", async () => {
    const whole = JSON.stringify({
      id: "resp_1",
      object: "response",
      status: "completed",
      output: [{ type: "message", role: "assistant", content: [{ type: "output_text", text: "78.54" }] }],
      usage: { input_tokens: 5, output_tokens: 2, total_tokens: 7 },
    });
    const { server, client } = await setup({ replies: [{ raw: whole }] }, { stream: true, max_retries: 0 });
    expect(await client.chat(firstTurn)).toMatchObject({ content: "78.54", finish_reason: "stop", usage: { total_tokens: 7 } });
    expect(server.responsesRequests[0]?.body?.["stream"]).toBe(true);
  });

  it("retries a 429 and a 500 as on Chat Completions", async () => {
    const { server, client } = await setup({
      replies: [{ status: 429, headers: { "retry-after": "0" } }, { status: 500 }, { content: "ok" }],
    });
    expect((await client.chat(firstTurn)).content).toBe("ok");
    expect(server.responsesRequests).toHaveLength(3);
  });

  it("a 200 that is not a response, a failed response, and a stream without its response are MODEL_BAD_REPLY, one line", async () => {
    const chat = JSON.stringify({ id: "chatcmpl-1", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "hi" } }] });
    const failed = JSON.stringify({
      id: "resp_1",
      object: "response",
      status: "failed",
      output: [],
      error: { code: "server_error", message: "The model crashed." },
    });
    const cut =
      'event: response.created\ndata: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","status":"in_progress","output":[]}}\n\n';
    const cases = [
      { reply: { raw: chat }, stream: false, message: /the reply is not a response of the Responses API \(request id req_1\); is base_url right\?/ },
      { reply: { raw: failed }, stream: false, message: /the response failed: The model crashed\./ },
      { reply: { raw: cut, content_type: "text/event-stream" }, stream: true, message: /the response stream ended after 1 event\(s\) without its response/ },
    ];
    for (const { reply, stream, message } of cases) {
      const { client } = await setup({ replies: [reply] }, { stream, max_retries: 0 });
      const err = await failure(client.chat(firstTurn));
      expect(err.code).toBe("MODEL_BAD_REPLY");
      expect(err.message).toMatch(message);
      expect(err.message).not.toContain("\n");
      await server?.close();
    }
  });

  it("structured output goes as text.format json_schema", async () => {
    const { server, client } = await setup({ replies: [{ content: '{"steps":["a"]}' }] }, { structured_output: true });
    const schema = { type: "object", properties: { steps: { type: "array", items: { type: "string" } } }, required: ["steps"] };
    await client.chat({ messages: [{ role: "user", content: "plan" }], response_format: { name: "Plan", schema } });
    expect(server.responsesRequests[0]?.body?.["text"]).toEqual({
      format: { type: "json_schema", name: "Plan", strict: true, schema: { ...schema, additionalProperties: false } },
    });
  });
});
