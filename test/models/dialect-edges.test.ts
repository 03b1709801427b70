/** Edges of the servers' habits found in review (docs/model-servers.md). */
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { layoutFromRefusal } from "../../src/models/dialect.js";
import { createOpenAIChatClient } from "../../src/models/openai-client.js";
import { StreamReader } from "../../src/models/openai-reply.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { modelTeam, OPENAI_MODEL_DEFAULTS, tempDir } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe("review edges", () => {
  it("knows DeepSeek-reasoner's refusal of two assistant turns in a row", () => {
    expect(
      layoutFromRefusal(
        "400 deepseek-reasoner does not support successive user or assistant messages (messages[2] and messages[3] in your input). You should interleave the user/assistant messages in the message sequence.",
      ),
    ).toBe("alternate");
  });

  it("keeps streamed tool calls apart when the server omits `index` or labels every call 0", () => {
    const read = (chunks: unknown[]) => {
      const reader = new StreamReader({ model: "m", request_id: null, tools: true }, undefined);
      for (const c of chunks) reader.push(c);
      return reader.end().tool_calls;
    };
    const delta = (tool_calls: unknown[]) => ({ choices: [{ delta: { tool_calls } }] });
    const noIndex = read([
      delta([{ id: "a", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }]),
      delta([{ id: "b", function: { name: "get_time", arguments: '{"tz":"CET"}' } }]),
    ]);
    expect(noIndex).toEqual([
      { id: "a", name: "get_weather", arguments: '{"city":"Paris"}' },
      { id: "b", name: "get_time", arguments: '{"tz":"CET"}' },
    ]);
    const allZero = read([
      delta([{ index: 0, id: "a", function: { name: "get_weather", arguments: '{"city":"Paris"}' } }]),
      delta([{ index: 0, id: "b", function: { name: "get_time", arguments: '{"tz":"CET"}' } }]),
    ]);
    expect(allZero.map((c) => c.name)).toEqual(["get_weather", "get_time"]);
    // The usual way still merges pieces by index.
    const pieces = read([delta([{ index: 0, id: "a", function: { name: "calc", arguments: '{"x":' } }]), delta([{ index: 0, function: { arguments: "1}" } }])]);
    expect(pieces).toEqual([{ id: "a", name: "calc", arguments: '{"x":1}' }]);
  });

  it("says a layout switch once, even when calls in flight are all refused", async () => {
    const server = await startOpenAIServer({ dialect: { roles: "alternate" }, respond: () => ({ content: "ok", delay_ms: 50 }) });
    servers.push(server);
    const client = createOpenAIChatClient({
      name: "default",
      provider: "openai",
      model: "m",
      base_url: server.url,
      api_key: "sk-x",
      timeout_ms: 5000,
      max_retries: 0,
      stream: false,
      ...OPENAI_MODEL_DEFAULTS,
    });
    const notices: string[] = [];
    const request = {
      messages: [
        { role: "user" as const, content: "q" },
        { role: "system" as const, content: "s" },
      ],
      onNotice: (n: { message: string }) => notices.push(n.message),
    };
    const replies = await Promise.all([1, 2, 3].map(() => client.chat(request)));
    expect(replies.map((r) => r.content)).toEqual(["ok", "ok", "ok"]);
    expect(notices).toHaveLength(1);
  });

  it("never takes a cut-off reply as plan_and_solve's answer, even on its last round", async () => {
    const server = await startOpenAIServer({
      replies: [{ content: "The answer is 4", finish_reason: "length" }, { content: "I could not finish: my reply was cut off." }],
    });
    servers.push(server);
    const file = modelTeam("cut", server.url, "  solver: { kind: plan_and_solve, max_iteration: 1, tools: [calculator] }\n");
    const result = await runTeam(await loadTeam(file), { input: "2+2?", traceDir: tempDir("cut-") }).result;
    expect(result.answer ?? result.error?.message).not.toBe("The answer is 4");
    expect(JSON.stringify(server.chatRequests.at(-1)?.body)).toContain("cut off at the token limit");
  });
});
