/**
 * Slow SSE readers cost a bounded amount (docs/server.md#slow-readers): each
 * frame waits until the reader took the one before; a reader that takes
 * nothing for the stall limit (short here) is dropped, and resumes with
 * Last-Event-ID without a gap.
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
  const server = await startServer({ team: await loadTeam(file), traceDir: tempDir("bp-"), port: 0, maxLiveRuns: 4, stallLimitMs: 5_000, rate: 1_000 });
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
  it("500 paused readers of a streaming run stay within a bound, and a dropped reader resumes without a gap", async () => {
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
    const readers = Array.from({ length: 500 }, () => pausedReader(server, taskId));
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);

    // The run's own client reads everything, reconnecting with Last-Event-ID should it be dropped
    // (it shares this busy process with 500 sockets, so it may read nothing for a while).
    const all: Awaited<ReturnType<typeof readSse>> = [];
    const keep = (e: (typeof all)[number]) => void all.push(e);
    await readSse(started, keep).catch(() => undefined);
    let drops = 0;
    while (all.at(-1)?.data.type !== "run.finished" && drops < 200) {
      drops++;
      const after = all.at(-1)?.id ?? "0";
      await readSse(await f(`${server.url}/v1/runs/${taskId}/events`, { headers: { "last-event-id": after } }), keep).catch(() => undefined);
    }
    clearInterval(sampler);
    expect(all.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer" });
    const lastSeq = Number(all.at(-1)!.id);
    expect(lastSeq).toBeGreaterThan(3000);

    // Unbounded, each paused reader would hold the whole run (~3 MB): 1.5 GB for 500.
    const grew = (peak - before) / 1024 / 1024;
    console.log(`500 paused readers: peak RSS +${grew.toFixed(0)} MB over ${lastSeq} events; the run's own reader was dropped ${drops} time(s)`);
    expect(all.map((e) => Number(e.id))).toEqual(Array.from({ length: lastSeq }, (_, i) => i + 1));
    expect(grew).toBeLessThan(450); // with a 256 KB bound per reader: ~200 MB alone, 300-310 MB beside the rest of the suite; without a bound, ~1.1 GB

    // A paused reader that was dropped: it reads what reached it, then picks up from its last id.
    const reader = readers[0]!;
    const text = await new Promise<string>((resolve) => {
      let got = "";
      reader.on("data", (d: Buffer) => (got += d.toString()));
      reader.on("close", () => resolve(got));
      reader.resume();
    });
    const body = text.slice(text.indexOf("\r\n\r\n") + 4).replace(/\r\n[0-9a-f]+\r\n/g, "");
    const complete = body.slice(0, body.lastIndexOf("\n\n") + 2);
    const first = parseSse(complete.replace(/^[0-9a-f]+\r\n/, ""));
    const firstSeqs = first.map((e) => Number(e.id));
    // Dropped before the end, it picks up from its last id; a loopback socket's buffers may also have taken the whole run
    // before the stall limit (test/server/long-answers.test.ts drops stalled clients for certain).
    const dropped = (firstSeqs.at(-1) ?? 0) < lastSeq;
    const rest = dropped
      ? await readSse(await f(`${server.url}/v1/runs/${taskId}/events`, { headers: { "last-event-id": String(firstSeqs.at(-1) ?? 0) } }))
      : [];
    const seqs = [...firstSeqs, ...rest.map((e) => Number(e.id))];
    expect(seqs).toEqual(Array.from({ length: lastSeq }, (_, i) => i + 1));
  }, 300_000);
});
