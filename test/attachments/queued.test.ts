/**
 * Attachments on a server that queues its runs for workers (docs/attachments.md,
 * docs/scale-out.md): a spawned `runtime serve --store postgres://...` keeps
 * the bytes in the store's attachments by hash and queues the request with
 * the hashes; a spawned `runtime worker` reads the bytes back and its run
 * sends the same image to the model (the project's OpenAI-compatible test
 * server). Spawns the built CLI: run `npm run build` first.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PNG, PNG_URL } from "../support/attachments.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { usePostgres } from "../support/postgres.js";
import { authedFetch, parseSse } from "../support/runtime-server.js";
import { killAll, serve, worker } from "../support/scale-out.js";
import { reactReply, writeTeam } from "../support/team.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const postgres = usePostgres();

const models: OpenAIServer[] = [];
afterEach(async () => {
  killAll();
  await Promise.all(models.splice(0).map((m) => m.close()));
});

describe("attachments on a server that queues runs for workers", () => {
  it("POST /v1/runs with an image: stored by hash, queued with the hash, the worker's run sends the same bytes", async () => {
    const model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "a red dot" }) }) });
    models.push(model);
    const team = writeTeam(`version: 1
name: looker
models:
  default: { provider: openai, model: test-model, base_url: "${model.url}", api_key: sk-looker-0123456789, max_retries: 0, attachments: [image] }
agents:
  looker: { kind: react }
`);
    const store = await postgres.createDatabase("queued_attachments");
    const server = await serve(team, store);
    await worker(team, store);

    const response = await authedFetch(server.token)(`${server.url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "What is in this picture?", attachments: [{ name: "pic.png", data: PNG.toString("base64") }] }),
    });
    expect(response.status).toBe(200);
    const events = parseSse(await response.text());
    expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer", answer: "a red dot" });

    // The model got the image, the same bytes, with the run's first user message.
    expect(model.chatRequests).toHaveLength(1);
    expect(model.chatRequests[0]?.body?.messages?.[0]).toEqual({
      role: "user",
      content: [
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url: PNG_URL } },
      ],
    });
    const sha256 = createHash("sha256").update(PNG).digest("hex");
    expect(events[0]?.data).toMatchObject({ type: "run.started", attachments: [{ name: "pic.png", media_type: "image/png", size: PNG.length, sha256 }] });
    expect(JSON.stringify(events)).not.toContain(PNG.toString("base64"));

    // In the store: the bytes once, under their hash; the queued request names the hash, never the bytes.
    const db = new pg.Client({ connectionString: store });
    await db.connect();
    try {
      const bytes = await db.query<{ sha256: string; data: Buffer }>("SELECT sha256, data FROM runtime.attachments");
      expect(bytes.rows.map((r) => r.sha256)).toEqual([sha256]);
      expect(Buffer.compare(bytes.rows[0]!.data, PNG)).toBe(0);
      const requests = await db.query<{ request_json: string }>("SELECT request_json FROM runtime.run_requests");
      expect(requests.rows).toHaveLength(1);
      const request = JSON.parse(String(requests.rows[0]!.request_json)) as { attachments?: unknown };
      expect(request.attachments).toEqual([{ name: "pic.png", media_type: "image/png", size: PNG.length, sha256 }]);
      expect(requests.rows[0]!.request_json).not.toContain(PNG.toString("base64"));
    } finally {
      await db.end();
    }
  });
});
