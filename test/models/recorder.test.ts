import { OPENAI_MODEL_DEFAULTS } from "../support/team.js";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createChatClient } from "../../src/models/factory.js";
import { recordingClient, writeScript, type RecordedReply } from "../../src/models/recorder.js";
import type { ChatRequest, ChatResponse } from "../../src/models/types.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const KEY = "sk-recorder-secret-42";

const requests: ChatRequest[] = [
  { agent_id: "solver", messages: [{ role: "user", content: "radius 5" }] },
  { agent_id: "helper", messages: [{ role: "user", content: "lookup" }] },
  {
    agent_id: "solver",
    messages: [
      { role: "user", content: "radius 5" },
      { role: "assistant", content: "{}" },
    ],
  },
];

describe("recorder", () => {
  it("records a live run against the test server and replays it with the scripted model", async () => {
    server = await startOpenAIServer({
      replies: [
        {
          content: '{"thought": "compute", "action": {"result": {"action_type": "CALL_TOOL"}}}',
          tool_calls: [
            { id: "call_1", name: "calculator", arguments: { expression: "round(pi * 5^2, 2)" } },
            { id: "call_2", name: "calculator", arguments: '{"expression": "2*pi*5"' },
          ],
          usage: { prompt_tokens: 30, completion_tokens: 12 },
        },
        { content: "formula: pi r^2", usage: { prompt_tokens: 5, completion_tokens: 4 } },
        { content: '{"action": {"result": {"action_type": "ANSWER", "output": {"answer": "78.54 and 31.42"}}}}' },
      ],
    });
    const live = createChatClient({
      name: "default",
      provider: "openai",
      model: "gpt-4o-mini",
      base_url: server.url,
      api_key: KEY,
      timeout_ms: 5000,
      max_retries: 0,
      stream: true,
      ...OPENAI_MODEL_DEFAULTS,
    });
    const sink: RecordedReply[] = [];
    const recorder = recordingClient(live, sink);
    expect(recorder.model).toBe("gpt-4o-mini");
    const recorded: ChatResponse[] = [];
    for (const r of requests) recorded.push(await recorder.chat(r));

    const file = join(mkdtempSync(join(tmpdir(), "record-")), "run.yaml");
    writeScript(file, sink);
    const text = readFileSync(file, "utf8");
    expect(text).not.toContain(KEY);
    expect(text).toContain("agent: solver");
    expect(text).toContain("id: call_1");
    expect(text).toContain("expression: round(pi * 5^2, 2)");

    const replay = createChatClient({ name: "offline", provider: "scripted", model: "scripted", script: file });
    // Replayed out of order across agents: selection is by agent, in recorded order per agent.
    const order = [1, 0, 2];
    const replayed: ChatResponse[] = [];
    for (const i of order) replayed[i] = await replay.chat(requests[i] as ChatRequest);

    const strip = (r: ChatResponse) => ({ content: r.content, tool_calls: r.tool_calls, usage: r.usage, finish_reason: r.finish_reason });
    expect(replayed.map(strip)).toEqual(recorded.map(strip));
    expect(replayed[0]?.tool_calls[1]?.arguments).toBe('{"expression": "2*pi*5"');
    await expect(replay.chat(requests[0] as ChatRequest)).rejects.toThrow(/no reply left for agent solver/);
  });

  it("records nothing for a failed call and passes the error through", async () => {
    server = await startOpenAIServer({ replies: [{ status: 400, error: { message: "bad request" } }] });
    const sink: RecordedReply[] = [];
    const recorder = recordingClient(
      createChatClient({
        name: "d",
        provider: "openai",
        model: "m",
        base_url: server.url,
        api_key: KEY,
        timeout_ms: 2000,
        max_retries: 0,
        stream: false,
        ...OPENAI_MODEL_DEFAULTS,
      }),
      sink,
    );
    await expect(recorder.chat(requests[0] as ChatRequest)).rejects.toThrow("model m: 400 bad request (request id req_1)");
    expect(sink).toEqual([]);
  });
});
