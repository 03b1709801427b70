/**
 * The attachments port (src/store/attachments.ts) on every adapter: bytes
 * kept by their SHA-256, the same bytes stored twice kept once, and a run
 * given an attachment (against the OpenAI-compatible test server) leaves its
 * bytes in its store under the hash its run.started names (docs/attachments.md).
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { runTeam } from "../../src/engine/run-team.js";
import { loadTeam } from "../../src/config/load.js";
import type { RunEvent } from "../../src/events/types.js";
import { makeAttachment } from "../../src/models/attachment.js";
import { PNG, PNG_URL } from "../support/attachments.js";
import { startOpenAIServer } from "../support/openai-server.js";
import { adapters } from "../support/store-adapters.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const sha = (data: Buffer) => createHash("sha256").update(data).digest("hex");

describe.each(adapters())("attachments on $name", (adapter) => {
  it("keeps bytes by hash, once; unknown hashes read as undefined", async () => {
    const store = await adapter.open();
    const files = store.attachments();
    const other = Buffer.from("%PDF-1.4 other");
    await files.put([{ sha256: sha(PNG), media_type: "image/png", data: PNG }]);
    await files.put([
      { sha256: sha(PNG), media_type: "image/png", data: PNG },
      { sha256: sha(other), media_type: "application/pdf", data: other },
    ]);
    await files.close();
    const later = store.attachments();
    expect(await later.get(sha(PNG))).toEqual(PNG);
    expect(await later.get(sha(other))).toEqual(other);
    expect(await later.get(sha(Buffer.from("none")))).toBeUndefined();
    await later.close();
  });

  it("a run given an image sends it and leaves its bytes in its store under the hash run.started names", async () => {
    const store = await adapter.open();
    const model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "a red dot" }) }) });
    try {
      const team = await loadTeam(
        writeTeam(`version: 1
name: looker
models:
  default: { provider: openai, model: m, base_url: "${model.url}", api_key: sk-looker-0123456789, max_retries: 0, attachments: [image] }
agents:
  looker: { kind: react }
`),
      );
      const events: RunEvent[] = [];
      const run = runTeam(team, {
        input: "What is it?",
        attachments: [makeAttachment("pic.png", PNG)],
        store,
        traceDir: tempDir(),
        sinks: [(e) => events.push(e)],
      });
      expect((await run.result).answer).toBe("a red dot");
      const started = events[0];
      expect(started?.type === "run.started" && started.attachments).toEqual([
        { name: "pic.png", media_type: "image/png", size: PNG.length, sha256: sha(PNG) },
      ]);
      expect(JSON.stringify(model.chatRequests[0]?.body?.messages?.[0])).toContain(PNG_URL);
      const files = store.attachments();
      expect(await files.get(sha(PNG))).toEqual(PNG);
      await files.close();
      expect(JSON.stringify(await store.runs.eventsOfTask(run.task_id))).not.toContain(PNG.toString("base64"));
    } finally {
      await model.close();
    }
  });
});
