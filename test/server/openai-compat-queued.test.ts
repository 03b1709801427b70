/**
 * OpenAI-compatible serving with a PostgreSQL store (docs/scale-out.md): the
 * request's run is queued for a worker, which runs it with the client's
 * history; a Responses chain continues in its session whichever worker runs it.
 */
import OpenAI from "openai";
import { expect, it, vi } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { startWorker } from "../../src/queue/start.js";
import { startServer } from "../../src/server/server.js";
import { createStore } from "../../src/store/create.js";
import { startOpenAIServer } from "../support/openai-server.js";
import { usePostgres } from "../support/postgres.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const postgres = usePostgres();

it("a queued chat completion's worker gives the model the earlier messages; a response chain goes on in its session", async () => {
  const model = await startOpenAIServer({ respond: (_b, i) => ({ content: reactReply("ANSWER", { answer: `answer ${i}` }) }) });
  const team = await loadTeam(
    writeTeam(`version: 1
name: queued
models:
  default: { provider: openai, model: m, base_url: "${model.url}", api_key: sk-queued-0123456789, max_retries: 0 }
agents:
  solver: { kind: react }
`),
  );
  const store = await createStore(await postgres.createDatabase("openai_queued"));
  const server = await startServer({ team, store, traceDir: tempDir("openai-queued-"), port: 0 });
  const worker = await startWorker({ store, teams: [team], pollMs: 100 });
  try {
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 });
    const chat = await client.chat.completions.create({
      model: "queued",
      messages: [
        { role: "user", content: "The code word is heron." },
        { role: "assistant", content: "Heron, noted." },
        { role: "user", content: "Which word?" },
      ],
    });
    expect(chat.choices[0]?.message.content).toBe("answer 0");
    expect(JSON.stringify(model.chatRequests[0]?.body?.messages)).toContain("The code word is heron.");

    const first = await client.responses.create({ model: "solver", input: "Remember the number 31." });
    const second = await client.responses.create({ model: "solver", input: "Which number?", previous_response_id: first.id });
    expect(second.output_text).toBe("answer 2");
    expect(JSON.stringify(model.chatRequests[2]?.body?.messages)).toContain("Remember the number 31.");
  } finally {
    await worker.stop();
    await server.close();
    await store.close();
    await model.close();
  }
});
