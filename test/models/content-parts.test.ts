/**
 * Replies whose `content` is a list of parts (Mistral's magistral models),
 * replayed byte for byte in their wire shape over real HTTP to the `openai`
 * client: the text parts are the reply, the thinking parts its reasoning
 * (shown on llm.response, never parsed as the protocol, never sent back).
 */
import { afterAll, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { readContent } from "../../src/models/dialect.js";
import { startOpenAIServer, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const THINKING = 'Okay, the user asks for 6 times 7. That is 42. I answer in the JSON format, {"action": ...}.';
const ANSWER = reactReply("ANSWER", { answer: "42" });

/** A magistral-medium-2507 reply as Mistral's API sends it (ids and times replaced). */
const PLAIN = JSON.stringify({
  id: "4f1b8a7c2e9d4b0f8c6a3e5d7b9f1a2c",
  object: "chat.completion",
  created: 1_764_000_000,
  model: "magistral-medium-2507",
  choices: [
    {
      index: 0,
      message: {
        role: "assistant",
        tool_calls: null,
        content: [
          { type: "thinking", thinking: [{ type: "text", text: THINKING }] },
          { type: "text", text: ANSWER },
        ],
      },
      finish_reason: "stop",
    },
  ],
  usage: { prompt_tokens: 412, total_tokens: 498, completion_tokens: 86 },
});

/**
 * The same reply streamed as Mistral streams it: the thinking in one-part
 * lists, the first text piece a one-part list too, the rest strings, and the
 * usage on the last chunk beside its choice.
 */
function streamed(): string {
  const chunk = (delta: Record<string, unknown>, finish_reason: string | null = null, extra = {}) =>
    `data: ${JSON.stringify({
      id: "9a8b7c6d5e4f40318c2b1a0f9e8d7c6b",
      object: "chat.completion.chunk",
      created: 1_764_000_000,
      model: "magistral-medium-2507",
      choices: [{ index: 0, delta, finish_reason }],
      ...extra,
    })}\n\n`;
  const pieces = (text: string) => text.match(/[\s\S]{1,9}/g) ?? [];
  const body = [chunk({ role: "assistant", content: "" })];
  for (const piece of pieces(THINKING)) body.push(chunk({ content: [{ type: "thinking", thinking: [{ type: "text", text: piece }] }] }));
  for (const [i, piece] of pieces(ANSWER).entries()) body.push(chunk({ content: i === 0 ? [{ type: "text", text: piece }] : piece }));
  body.push(chunk({ content: "" }, "stop", { usage: { prompt_tokens: 412, total_tokens: 498, completion_tokens: 86 } }));
  return `${body.join("")}data: [DONE]\n\n`;
}

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function run(reply: Reply, stream: boolean) {
  const server = await startOpenAIServer({ replies: [reply] });
  servers.push(server);
  const file = writeTeam(
    `version: 1
name: magistral
models:
  default: { provider: openai, model: magistral-medium-2507, base_url: "${server.url}", api_key: sk-mistral-0123456789, max_retries: 0, stream: ${stream} }
agents:
  solver: { kind: react }
`,
    {},
    tempDir("parts-"),
  );
  const events: RunEvent[] = [];
  const result = await runTeam(await loadTeam(file), { input: "What is 6 times 7?", traceDir: tempDir("parts-trace-"), sinks: [(e) => events.push(e)] }).result;
  return { result, events, server };
}

describe("content as a list of parts (Mistral magistral)", () => {
  it.each([
    { name: "non-streamed", reply: { raw: PLAIN } as Reply, stream: false },
    { name: "streamed", reply: { raw: streamed(), content_type: "text/event-stream" } as Reply, stream: true },
  ])("a recorded $name reply answers, its thinking shown as reasoning", async ({ reply, stream }) => {
    const { result, events } = await run(reply, stream);
    expect(result.error, result.error?.message).toBeUndefined();
    expect(result.answer).toBe("42");
    const response = events.find((e) => e.type === "llm.response");
    expect(response?.type === "llm.response" && response.reasoning).toBe(THINKING);
    expect(response?.type === "llm.response" && response.usage).toEqual({ prompt_tokens: 412, completion_tokens: 86, total_tokens: 498 });
    if (stream) {
      // The streamed text is the reply's, without the thinking.
      const deltas = events.flatMap((e) => (e.type === "llm.delta" ? [e.text] : [])).join("");
      expect(deltas).toBe(ANSWER);
    }
  });

  it("reads text parts joined, thinking parts as reasoning, other parts as nothing", () => {
    expect(readContent([{ type: "text", text: "a" }, { type: "image_url" }, { type: "text", text: "b" }])).toEqual({ text: "ab" });
    expect(readContent([{ type: "thinking", thinking: [{ type: "text", text: "hm" }] }])).toEqual({ text: null, reasoning: "hm" });
    expect(
      readContent([
        { type: "thinking", thinking: "hm" },
        { type: "text", text: "x" },
      ]),
    ).toEqual({ text: "x", reasoning: "hm" });
    expect(readContent("plain")).toEqual({ text: "plain" });
    expect(readContent(null)).toEqual({ text: null });
  });
});
