/**
 * The Anthropic client over HTTP against the test server's Messages API:
 * thinking shown as reasoning and carried back with its signature (the
 * server refuses a forged one), an image and a PDF as blocks, streamed text
 * as deltas, and a 529 retried on the one retry policy.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { OpenAIModelConfig } from "../../src/config/types.js";
import { makeAttachment } from "../../src/models/attachment.js";
import { createAnthropicChatClient } from "../../src/models/anthropic-client.js";
import type { ChatMessage } from "../../src/models/types.js";
import { PDF, PNG } from "../support/attachments.js";
import { type OpenAIServer, type Reply, startOpenAIServer } from "../support/openai-server.js";
import { OPENAI_MODEL_DEFAULTS } from "../support/team.js";

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(replies: Reply[], overrides: Partial<OpenAIModelConfig> = {}) {
  server = await startOpenAIServer({ replies });
  const config: OpenAIModelConfig = {
    name: "claude",
    provider: "anthropic",
    model: "claude-test",
    base_url: server.url.replace(/\/v1$/, ""),
    api_key: "sk-ant-test-0123456789",
    timeout_ms: 10_000,
    max_retries: 2,
    stream: false,
    ...OPENAI_MODEL_DEFAULTS,
    cache: true,
    ...overrides,
  };
  return { server, client: createAnthropicChatClient(config) };
}

const tools = [{ name: "calculator", description: "computes", parameters: { type: "object", properties: { expression: { type: "string" } } } }];

describe.each([false, true])("the Anthropic client, stream: %s", (stream) => {
  it("shows thinking as reasoning and carries it back, signed, before the reply's tool call", async () => {
    const { server, client } = await setup(
      [
        { reasoning: "I should use the calculator.", tool_calls: [{ id: "toolu_1", name: "calculator", arguments: { expression: "1+1" } }] },
        { content: "It is 2." },
      ],
      { stream },
    );
    const deltas: string[] = [];
    const messages: ChatMessage[] = [
      { role: "system", content: "Be brief." },
      { role: "user", content: "1+1?" },
    ];
    const first = await client.chat({ messages, tools });
    expect(first.reasoning).toBe("I should use the calculator.");
    expect(first.tool_calls).toEqual([{ id: "toolu_1", name: "calculator", arguments: '{"expression":"1+1"}' }]);
    expect(first.finish_reason).toBe("tool_calls");
    messages.push({
      role: "assistant",
      content: null,
      tool_calls: first.tool_calls,
      ...(first.reasoning_items ? { reasoning_items: first.reasoning_items } : {}),
    });
    messages.push({ role: "tool", tool_call_id: "toolu_1", content: "2" });
    const second = await client.chat({ messages, tools, onDelta: (d) => deltas.push(d) });
    expect(second.content).toBe("It is 2.");
    if (stream) expect(deltas.join("")).toBe("It is 2.");
    const sent = server.anthropicRequests[1]?.body?.messages as Array<{ content: Array<{ type: string }> }>;
    expect(sent[1]?.content.map((b) => b.type)).toEqual(["thinking", "tool_use"]);
    expect(second.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it("sends an image and a PDF as blocks before the text", async () => {
    const { server, client } = await setup([{ content: "A pixel and a page." }], { stream });
    const attachments = [makeAttachment("dot.png", PNG), makeAttachment("doc.pdf", PDF)];
    await client.chat({ messages: [{ role: "user", content: "What are these?", attachments }] });
    const messages = (server.anthropicRequests[0]?.body?.messages ?? []) as Array<{ content: Array<Record<string, unknown>> }>;
    const content = messages[0]?.content ?? [];
    expect(content.map((b) => b["type"])).toEqual(["image", "document", "text"]);
    expect(content[0]).toEqual({ type: "image", source: { type: "base64", media_type: "image/png", data: PNG.toString("base64") } });
    expect(content[1]).toMatchObject({ source: { type: "base64", media_type: "application/pdf" } });
  });

  it("retries an overloaded server (529) on the one retry policy, then answers", async () => {
    const { server, client } = await setup([{ status: 529, headers: { "retry-after": "0" } }, { content: "fine" }], { stream });
    const reply = await client.chat({ messages: [{ role: "user", content: "hi" }] });
    expect(reply.content).toBe("fine");
    expect(server.anthropicRequests).toHaveLength(2);
    // The SDK's own retries are off: its retry header is never sent.
    expect(server.anthropicRequests.map((r) => r.headers["x-stainless-retry-count"] ?? "0")).toEqual(["0", "0"]);
  });
});
