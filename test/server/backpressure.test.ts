/**
 * Slow SSE readers cost a bounded amount (docs/server.md#slow-readers): each
 * frame waits until the reader took the one before, so a paused reader holds
 * one frame, and once it reads again it gets every event without a gap.
 */
import { connect, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { startServer, type RunningServer } from "../../src/server/server.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";
import { authedFetch, parseSse, readSse } from "../support/runtime-server.js";

const closers: { close(): Promise<void> }[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  while (closers.length) await closers.pop()?.close();
});

/** A team whose one run streams `chunks` llm.delta events of ~1 KB each, paced so followers can join. */
async function streamingServer(chunks: number): Promise<{ server: RunningServer; model: OpenAIServer }> {
  const answer = "x".repeat(chunks * 1000);
  const model = await startOpenAIServer({ chunk_size: 1000, respond: () => ({ content: reactReply("ANSWER", { answer }), delay_ms: 300, drip_ms: 1 }) });
  closers.push(model);
  const file = writeTeam(`version: 1
name: chatty
models:
  default: { provider: openai, model: m, base_url: "${model.url}", api_key: sk-chatty-0123456789, max_retries: 0, stream: true, timeout_ms: 300000 }
agents:
  solver: { kind: react }
`);
  const server = await startServer({ team: await loadTeam(file), traceDir: tempDir("bp-"), port: 0, maxLiveRuns: 4 });
  closers.push(server);
  return { server, model };
}

/** A raw reader of a run's events that never reads: its socket is paused from the start. */
function pausedReader(server: RunningServer, taskId: string): Socket {
  const socket = connect(server.port, "127.0.0.1");
  socket.write(`GET /v1/runs/${taskId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${server.token}\r\n\r\n`);
  socket.pause();
  socket.on("error", () => {});
  sockets.push(socket);
  return socket;
}

describe("slow SSE readers", () => {
  it("100 paused readers of a streaming run stay within a bound, and a paused reader that reads again misses nothing", async () => {
    const { server } = await streamingServer(3000);
    const f = authedFetch(server.token);
    const started = await f(`${server.url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "talk" }),
    });
    const taskId = started.headers.get("x-task-id")!;
    global.gc?.();
    const before = process.memoryUsage().rss;
    const readers = Array.from({ length: 100 }, () => pausedReader(server, taskId));
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);

    // The run's own client reads everything, however far behind it falls in this busy process: it is never dropped.
    const all = await readSse(started);
    clearInterval(sampler);
    expect(all.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer", error: undefined });
    const lastSeq = Number(all.at(-1)!.id);
    expect(lastSeq).toBeGreaterThan(3000);
    expect(all.map((e) => Number(e.id))).toEqual(Array.from({ length: lastSeq }, (_, i) => i + 1));

    // Unbounded, each paused reader would hold the whole run (~3 MB): 300 MB for 100.
    const grew = (peak - before) / 1024 / 1024;
    console.log(`100 paused readers: peak RSS +${grew.toFixed(0)} MB over ${lastSeq} events`);
    expect(grew).toBeLessThan(450); // before every frame waited for the one before: ~200 MB alone (256 KB a reader); without a bound, ~1.1 GB

    // A paused reader that reads again: every event, to run.finished.
    const reader = readers[0]!;
    const text = await new Promise<string>((resolve) => {
      let got = "";
      reader.on("data", (d: Buffer) => {
        got += d.toString();
        if (got.includes("event: run.finished")) resolve(got);
      });
      reader.resume();
    });
    const body = text.slice(text.indexOf("\r\n\r\n") + 4).replace(/\r\n[0-9a-f]+\r\n/g, "");
    const seqs = parseSse(body.replace(/^[0-9a-f]+\r\n/, "")).map((e) => Number(e.id));
    expect(seqs).toEqual(Array.from({ length: lastSeq }, (_, i) => i + 1));
    // (Readers that are never dropped are written to until their sockets fill: the run's model may be read slowly here.)
  }, 300_000);
});
