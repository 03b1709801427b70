/**
 * Streams that never cut an answer (docs/server.md#slow-readers): a model
 * streams a 64 KB and a 1 MB answer, thousands of deltas arriving in one
 * burst, and every protocol's client gets the whole answer and its
 * protocol's end: `POST /v1/runs`, `GET /v1/runs/:id/events` (200
 * followers), the `openai` client's chat and Responses streams, the A2A
 * SDK's stream. A client that pauses 2 s still gets everything; one that
 * stops reading is dropped after the stall limit, its run finishes and is
 * stored, and what the server holds for it stays bounded.
 */
import { connect, type Socket } from "node:net";
import { TaskState, type Task } from "@a2a-js/sdk";
import OpenAI from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { startServer, type RunningServer } from "../../src/server/server.js";
import { a2aClient, artifactText, userMessage } from "../support/a2a.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { authedFetch, eventually, parseSse, readSse, type Sse } from "../support/runtime-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

/** Short in these tests, so that a stalled client is dropped soon; longer than the 2 s pause of a client that reads on. */
const STALL_LIMIT_MS = 4_000;

/** An answer of `bytes` characters that shows any piece lost or out of order: numbered words. */
function answerOf(bytes: number): string {
  const words: string[] = [];
  for (let i = 0, n = 0; n < bytes; i++, n += 8) words.push(`${i.toString(36).padStart(7, "0")} `);
  return words.join("").slice(0, bytes);
}

interface Served {
  answer: string;
  server: RunningServer;
  model: OpenAIServer;
  fetch: typeof fetch;
  openai: OpenAI;
}

/**
 * A server whose team's model streams `answer` in `chunk`-character deltas, all at once after `delay_ms`
 * (followers join meanwhile). The clients share this process with the server: a stall limit as short as
 * STALL_LIMIT_MS only where a client stalls on purpose, else the default.
 */
async function serveAnswer(bytes: number, chunk: number, delay_ms: number, stallLimitMs?: number): Promise<Served> {
  const answer = answerOf(bytes);
  const model = await startOpenAIServer({ chunk_size: chunk, respond: () => ({ content: reactReply("ANSWER", { answer }), delay_ms }) });
  const file = writeTeam(`version: 1
name: long
models:
  default: { provider: openai, model: m, base_url: "${model.url}", api_key: sk-long-0123456789, max_retries: 0, stream: true, timeout_ms: 120000 }
agents:
  solver: { kind: react }
`);
  const server = await startServer({
    team: await loadTeam(file),
    traceDir: tempDir("long-"),
    port: 0,
    maxLiveRuns: 64,
    // 200 followers join at once: more than the default rate's burst (50 a second, 100 at once) would answer 429.
    rate: 1_000,
    ...(stallLimitMs ? { stallLimitMs } : {}),
  });
  return { answer, server, model, fetch: authedFetch(server.token), openai: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 }) };
}

const post = (s: Served, headers: Record<string, string> = {}) =>
  s.fetch(`${s.server.url}/v1/runs`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify({ input: "talk" }) });

/** A run's stream read whole: every seq from 1 in order, ending with run.finished and the answer. */
function expectWhole(events: readonly Sse[], answer: string, from = 1): void {
  expect(events.map((e) => Number(e.id))).toEqual(Array.from({ length: events.length }, (_, i) => i + from));
  expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer" });
  // Compared, not diffed: a diff of a 1 MB answer would bury the failure.
  expect((events.at(-1)?.data as { answer?: string } | undefined)?.answer === answer).toBe(true);
}

/** A body of SSE read as text, checked without parsing every event (200 of them at once): ids 1..n in order, run.finished with the answer last. */
function expectWholeText(text: string, answer: string): void {
  const ids = [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
  expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => i + 1));
  const last = parseSse(text.slice(text.lastIndexOf("\n\nid: ") + 2));
  expect(last.map((e) => [e.data.type, (e.data as { answer?: string }).answer === answer])).toEqual([["run.finished", true]]);
}

/** The answer a chat completions stream gave through the `openai` client, and how it finished. */
async function chatStream(s: Served): Promise<{ text: string; finish: (string | null)[] }> {
  const stream = await s.openai.chat.completions.create({ model: "long", messages: [{ role: "user", content: "talk" }], stream: true });
  let text = "";
  const finish: (string | null)[] = [];
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? "";
    if (chunk.choices[0]?.finish_reason) finish.push(chunk.choices[0].finish_reason);
  }
  return { text, finish };
}

/** A Responses stream through the `openai` client: its deltas, its event types, its final response. */
async function responsesStream(s: Served) {
  const stream = s.openai.responses.stream({ model: "long", input: "talk" });
  let deltas = "";
  const types: string[] = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === "response.output_text.delta") deltas += event.delta;
  }
  return { deltas, types, final: await stream.finalResponse() };
}

/** An A2A stream through the SDK's client: the answer as its chunks built it, the last artifact, the last state. */
async function a2aStream(s: Served) {
  const client = await a2aClient(s.server.url, s.server.token);
  let built = "";
  let last: Task["artifacts"][number] | undefined;
  let state: unknown;
  for await (const r of client.sendMessageStream(userMessage("talk"))) {
    if (r.payload?.$case === "artifactUpdate") {
      const piece = artifactText({ artifacts: [r.payload.value.artifact!] } as Task);
      if (r.payload.value.lastChunk) last = r.payload.value.artifact;
      else built = r.payload.value.append ? built + piece : piece;
    }
    if (r.payload?.$case === "statusUpdate") state = r.payload.value.status?.state;
  }
  return { built, last: last ? artifactText({ artifacts: [last] } as Task) : undefined, state };
}

describe.each([
  { size: "64 KB", bytes: 64 * 1024, chunk: 16, followers: 200 },
  // 50 here: 200 followers of a 1 MB answer's 5 MB of events are 1 GB through this one process.
  { size: "1 MB", bytes: 1024 * 1024, chunk: 256, followers: 50 },
])("a $size answer streamed in one burst", ({ bytes, chunk, followers }) => {
  let s: Served;
  beforeAll(async () => {
    s = await serveAnswer(bytes, chunk, 1500);
  });
  afterAll(async () => {
    await s?.server.close();
    await s?.model.close();
  });

  it(`reaches the client of POST /v1/runs and ${followers} followers of GET /v1/runs/:id/events whole, each ending with run.finished`, async () => {
    const started = await post(s);
    const taskId = started.headers.get("x-task-id")!;
    // The followers join while the model is still thinking, and take the burst live.
    const following = Array.from({ length: followers }, () =>
      s.fetch(`${s.server.url}/v1/runs/${taskId}/events`).then(async (r) => ({ status: r.status, text: await r.text() })),
    );
    const own = await readSse(started);
    expectWhole(own, s.answer);
    expect(own.filter((e) => e.data.type === "llm.delta").length).toBeGreaterThan(bytes / chunk);
    for (const { status, text } of await Promise.all(following)) {
      expect(status).toBe(200);
      expectWholeText(text, s.answer);
    }
  }, 300_000);

  it("reaches the openai client's chat completions stream whole, with finish_reason stop, and ends with [DONE]", async () => {
    const { text, finish } = await chatStream(s);
    expect(text).toBe(s.answer);
    expect(finish).toEqual(["stop"]);
    // The client stops at [DONE] as at a cut connection: the raw body shows it was sent.
    const raw = await s.fetch(`${s.server.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "long", messages: [{ role: "user", content: "talk" }], stream: true }),
    });
    const body = await raw.text();
    expect(body.endsWith('"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')).toBe(true);
  }, 120_000);

  it("reaches the openai client's Responses stream whole, closing with each .done frame and response.completed", async () => {
    const { deltas, types, final } = await responsesStream(s);
    expect(deltas).toBe(s.answer);
    expect(final.output_text).toBe(s.answer);
    expect(types.at(-1)).toBe("response.completed");
    expect(types.filter((t) => t.endsWith(".done"))).toEqual(["response.output_text.done", "response.content_part.done", "response.output_item.done"]);
  }, 120_000);

  it("reaches the A2A SDK client's stream whole, ending with the task completed", async () => {
    const { built, last, state } = await a2aStream(s);
    expect(built).toBe(s.answer);
    expect(last).toBe(s.answer);
    expect(state).toBe(TaskState.TASK_STATE_COMPLETED);
  }, 120_000);
});

/** A raw client of `request` that reads nothing: its socket is paused from the start. */
function stalled(server: RunningServer, request: string): Socket {
  const socket = connect(server.port, "127.0.0.1");
  socket.write(request);
  socket.pause();
  socket.on("error", () => {});
  return socket;
}

const droppedSoFar = async (s: Served): Promise<number> => {
  const text = await (await s.fetch(`${s.server.url}/metrics`)).text();
  return Number(/^runtime_sse_clients_dropped_total (\d+)$/m.exec(text)?.[1]);
};

describe("slow and stalled clients of a 1 MB answer", () => {
  let s: Served;
  const sockets: Socket[] = [];
  beforeAll(async () => {
    s = await serveAnswer(1024 * 1024, 256, 0, STALL_LIMIT_MS);
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await s?.server.close();
    await s?.model.close();
  });

  it("a client that pauses 2 s mid-stream still gets every event and run.finished", async () => {
    const started = await post(s);
    const reader = started.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    let paused = false;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      if (!paused && text.includes("event: llm.delta")) {
        // Reads nothing for 2 s, well within the stall limit: the server waits for it.
        paused = true;
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
    expect(paused).toBe(true);
    const events = parseSse(text);
    expectWhole(events, s.answer);
  }, 120_000);

  it("one that stops reading is dropped after the stall limit; its run finishes and is stored; the server's memory stays bounded", async () => {
    const dropped = await droppedSoFar(s);
    global.gc?.();
    const before = process.memoryUsage();
    let peak = before.rss;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    // The run's own client and 50 followers, none reading a byte.
    const starter = stalled(
      s.server,
      `POST /v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.server.token}\r\ncontent-type: application/json\r\ncontent-length: 17\r\n\r\n{"input": "talk"}`,
    );
    sockets.push(starter);
    const taskId = await new Promise<string>((resolve) => {
      // Read the headers only: the task id, then nothing more.
      starter.once("readable", () => {
        const head = String(starter.read(512) ?? "");
        resolve(/x-task-id: (\S+)/i.exec(head)?.[1] ?? "");
      });
    });
    expect(taskId).not.toBe("");
    const followers = Array.from({ length: 50 }, () =>
      stalled(s.server, `GET /v1/runs/${taskId}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.server.token}\r\n\r\n`),
    );
    sockets.push(...followers);

    // The run finishes, its answer stored, whatever its clients do.
    const stored = await eventually(async () => {
      const got = (await (await s.fetch(`${s.server.url}/v1/runs/${taskId}`)).json()) as { live: boolean; events: { type: string; answer?: string }[] };
      if (got.live) return undefined;
      return { last: got.events.at(-1), events: got.events.length, bytes: JSON.stringify(got.events).length };
    }, 120_000);
    expect(stored.last).toMatchObject({ type: "run.finished", result_type: "answer" });
    expect(stored.last?.answer === s.answer).toBe(true);
    // Every stalled client is dropped once it has read nothing for the stall limit.
    await eventually(async () => ((await droppedSoFar(s)) >= dropped + 51 ? true : undefined), 120_000);
    clearInterval(sampler);
    const grew = peak - before.rss;
    console.log(
      `51 stalled clients of a run of ${stored.events} events (${(stored.bytes / 1e6).toFixed(1)} MB): peak RSS +${(grew / 1e6).toFixed(0)} MB ` +
        "(the run, its model's reply and the test's own reads included)",
    );
    // Unbounded, each stalled client would hold the whole run: 51 times its size.
    expect(grew).toBeLessThan((51 * stored.bytes) / 2);

    // What reached the stalled starter stops short of the end, and the connection is closed.
    const text = await new Promise<string>((resolve) => {
      let got = "";
      starter.on("data", (d: Buffer) => (got += d.toString()));
      starter.on("close", () => resolve(got));
      starter.resume();
    });
    expect(text).not.toContain("event: run.finished");
  }, 300_000);
});
