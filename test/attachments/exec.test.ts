/**
 * `runtime exec TEAM "question" --attach FILE` (docs/attachments.md) against
 * the OpenAI-compatible test server with the real openai client: the image
 * reaches the model as an image part with the bytes' data URL (a PDF as an
 * input_file on the Responses API), files past the cap or for a model that
 * takes none are refused with exit 2 before any request, a run killed with
 * SIGKILL resumes sending the same bytes, a replay is identical, and no
 * event, journal entry or trace holds the bytes.
 */
import { readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { type Arrival, execKilledAt, storedRun } from "../support/kill-resume.js";
import { type OpenAIServer, type Reply, startOpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";
import { PDF, PNG, PNG_URL } from "../support/attachments.js";

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

/** One calculator round, then the answer. */
function reply(rounds: number): Reply {
  if (rounds < 1)
    return { content: reactReply("CALL_TOOL", {}, "", "count"), tool_calls: [{ id: "c0", name: "calculator", arguments: { expression: "2+2" } }] };
  return { content: reactReply("ANSWER", { answer: "a red dot" }) };
}

async function team(model: string) {
  const arrival: Arrival = {};
  const server = await startOpenAIServer({
    respond: (body, index) =>
      arrival.onArrival?.(index) === "drop" ? { drop: true } : reply((body.messages ?? []).filter((m) => m.role === "assistant").length),
  });
  servers.push(server);
  const file = writeTeam(`version: 1
name: attach
models:
  default: { provider: openai, model: m, base_url: "${server.url}", api_key: sk-attach-0123456789, max_retries: 0, ${model} }
agents:
  looker: { kind: react, tools: [calculator] }
`);
  const dir = tempDir("attach-files-");
  writeFileSync(join(dir, "pic.png"), PNG);
  writeFileSync(join(dir, "doc.pdf"), PDF);
  return { server, file, arrival, dir };
}

/** Every byte the run left in its trace directory, as text. */
function stored(traceDir: string): string {
  return ["traces.db", "traces.db-wal"]
    .map((f) => {
      try {
        return readFileSync(join(traceDir, f)).toString("latin1");
      } catch {
        return "";
      }
    })
    .join("");
}

describe("runtime exec --attach", () => {
  it("sends the image as an image_url part of the first user message, and logs only its reference", async () => {
    const { server, file, dir } = await team("attachments: [image]");
    const traceDir = tempDir();
    const r = await runCli(["exec", file, "What is in this picture?", "--attach", join(dir, "pic.png"), "--trace-dir", traceDir, "--events", "ndjson"]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(server.chatRequests).toHaveLength(2);
    for (const request of server.chatRequests) {
      const first = request.body?.messages?.[0];
      expect(first?.role).toBe("user");
      expect(first?.content).toEqual([
        { type: "text", text: "What is in this picture?" },
        { type: "image_url", image_url: { url: PNG_URL } },
      ]);
    }
    const base64 = PNG.toString("base64");
    expect(r.stdout).not.toContain(base64);
    const started = JSON.parse(r.stdout.split("\n")[0] ?? "{}") as Record<string, unknown>;
    expect(started["attachments"]).toEqual([{ name: "pic.png", media_type: "image/png", size: PNG.length, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) }]);
    expect(stored(traceDir)).not.toContain(base64);
    expect(readFileSync(join(traceDir, "attachments.db")).includes(PNG)).toBe(true);
  });

  it("sends an image and a PDF as input_image and input_file on the Responses API", async () => {
    const { server, file, dir } = await team("api: responses, attachments: [image, pdf]");
    const r = await runCli(["exec", file, "Compare them", "--attach", join(dir, "pic.png"), "--attach", join(dir, "doc.pdf"), "--trace-dir", tempDir()]);
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("a red dot\n");
    const input = server.responsesRequests[0]?.body?.["input"] as Array<Record<string, unknown>>;
    expect(input[0]).toEqual({
      type: "message",
      role: "user",
      content: [
        { type: "input_text", text: "Compare them" },
        { type: "input_image", image_url: PNG_URL, detail: "auto" },
        { type: "input_file", filename: "doc.pdf", file_data: `data:application/pdf;base64,${PDF.toString("base64")}` },
      ],
    });
  });

  it("refuses a file over the cap with exit 2 before any request", async () => {
    const { server, file, dir } = await team("attachments: [image]");
    const big = join(dir, "big.png");
    writeFileSync(big, PNG);
    truncateSync(big, 20 * 1024 * 1024 + 1);
    const r = await runCli(["exec", file, "What is in this picture?", "--attach", big, "--trace-dir", tempDir()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^runtime exec: attachment .*big\.png is 20\.0 MiB, over the cap of 20\.0 MiB an attachment\n$/);
    expect(server.requests).toHaveLength(0);
  });

  it("refuses a file that is no image nor PDF, and a model that takes no images, with exit 2 before any request", async () => {
    const { server, file, dir } = await team("attachments: []");
    writeFileSync(join(dir, "notes.txt"), "hello");
    const text = await runCli(["exec", file, "Read it", "--attach", join(dir, "notes.txt"), "--trace-dir", tempDir()]);
    expect(text.code).toBe(2);
    expect(text.stderr).toBe("runtime exec: attachment notes.txt is not a png, jpeg, webp, gif or pdf file\n");
    const r = await runCli(["exec", file, "What is in this picture?", "--attach", join(dir, "pic.png"), "--trace-dir", tempDir()]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      "model default of agent looker takes no image attachments (its attachments: []); list image in its attachments if it reads them",
    );
    expect(server.requests).toHaveLength(0);
  });

  it("resumes a run killed mid-way sending the same bytes", async () => {
    const { server, file, dir, arrival } = await team("attachments: [image]");
    const traceDir = tempDir();
    await execKilledAt([file, "What is in this picture?", "--attach", join(dir, "pic.png"), "--trace-dir", traceDir], arrival, 1);
    const before = storedRun(traceDir);
    expect(before.replies).toBe(1);
    const resumed = await runCli(["resume", before.task_id, "--trace-dir", traceDir]);
    expect(resumed.stderr).toBe("");
    expect(resumed.stdout).toBe("a red dot\n");
    const bodies = server.chatRequests.map((r) => JSON.stringify(r.body));
    expect(bodies).toHaveLength(3);
    expect(bodies[2]).toBe(bodies[1]);
    expect(bodies[2]).toContain(PNG_URL);
  });

  it("replays a run identical, its request built from the bytes read back from the store", async () => {
    const { file, dir } = await team("attachments: [image]");
    const traceDir = tempDir();
    const r = await runCli(["exec", file, "What is in this picture?", "--attach", join(dir, "pic.png"), "--trace-dir", traceDir]);
    expect(r.stdout).toBe("a red dot\n");
    const replay = await runCli(["replay", storedRun(traceDir).task_id, "--trace-dir", traceDir]);
    expect(replay.stdout).toMatch(/^identical: \d+ events, the same answer\n$/);
    expect(replay.code).toBe(0);
  });
});
