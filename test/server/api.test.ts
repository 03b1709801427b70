import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/events/types.js";
import type { RunSummary } from "../../src/store/runs.js";
import { startOpenAIServer } from "../support/openai-server.js";
import { reactReply, writeTeam } from "../support/team.js";
import { CIRCLE_QUESTION, eventually, postRun, readSse, serveTeam, type Sse } from "../support/runtime-server.js";

const SECRET = "sk-test-SECRET-serve-8d1e4f7a2b";
const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

async function circleServer() {
  const server = await serveTeam("teams/circle-react.yaml");
  closers.push(server);
  return server;
}

/** A react team on the OpenAI-compatible test server, with an API key that must never be echoed. */
function openaiTeam(url: string): string {
  return writeTeam(`version: 1
name: serve-test
models:
  default:
    provider: openai
    model: test-model
    base_url: ${url}
    api_key: ${SECRET}
    timeout_ms: 20000
    max_retries: 0
agents:
  solver:
    kind: react
    description: answers with the calculator
    tools: [calculator]
`);
}

const json = async (res: Response) => (await res.json()) as Record<string, unknown>;

describe("runtime serve: the run endpoint", () => {
  it("streams every event of a run as SSE, in seq order, ending with run.finished and the answer", async () => {
    const server = await circleServer();
    const { response, events } = await postRun(server.url, { input: CIRCLE_QUESTION }, server.token);

    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const taskId = response.headers.get("x-task-id");
    expect(taskId).toBeTruthy();
    expect(events.map((e) => e.data.seq)).toEqual(events.map((_, i) => i + 1));
    for (const e of events) {
      expect(e.id).toBe(String(e.data.seq));
      expect(e.event).toBe(e.data.type);
      expect(e.data.task_id).toBe(taskId);
    }
    expect(events[0]?.data).toMatchObject({ type: "run.started", input: CIRCLE_QUESTION });
    const types = events.map((e) => e.data.type);
    expect(types).toContain("recursion.started");
    expect(types.filter((t) => t === "tool.finished")).toHaveLength(2);
    const last = events.at(-1)!.data;
    expect(last.type).toBe("run.finished");
    if (last.type !== "run.finished") return;
    expect(last.result_type).toBe("answer");
    expect(last.answer).toMatch(/78\.54/);
    expect(last.answer).toMatch(/31\.42/);
  });

  it("refuses bad requests with a 4xx JSON error", async () => {
    const server = await circleServer();
    const post = (body: string, type = "application/json") =>
      server.fetch(`${server.url}/v1/runs`, { method: "POST", headers: { "content-type": type }, body });

    const cases: [Response, number, RegExp][] = [
      [await post("{not json"), 400, /not valid JSON/],
      [await post("{}"), 400, /input is required/],
      [await post(JSON.stringify({ input: "   " })), 400, /input is required/],
      [await post(JSON.stringify(["x"])), 400, /JSON object/],
      [await post(JSON.stringify({ input: "x", agent: "nobody" })), 400, /unknown agent 'nobody'.*solver/],
      [await post(JSON.stringify({ input: "x", agnet: "solver" })), 400, /unknown field\(s\) agnet/],
      [await post(JSON.stringify({ input: "x", session_id: "a b/c" })), 400, /session_id/],
      [await post(JSON.stringify({ input: "x" }), "text/plain"), 415, /application\/json/],
      [await post(JSON.stringify({ input: "x".repeat(1024 * 1024 + 10) })), 413, /larger than/],
      [await server.fetch(`${server.url}/v1/runs/no-such-task`), 404, /no run with task_id no-such-task/],
      [await server.fetch(`${server.url}/v1/runs/no-such-task/events`), 404, /no run/],
      [await server.fetch(`${server.url}/v1/traces/no-such-trace`), 404, /no events with trace_id/],
      [await server.fetch(`${server.url}/v1/runs?limit=zero`), 400, /limit/],
      [await server.fetch(`${server.url}/v1/nothing`), 404, /no such endpoint/],
      [await server.fetch(`${server.url}/v1/team`, { method: "DELETE" }), 405, /answers GET/],
    ];
    for (const [res, status, message] of cases) {
      expect(res.status).toBe(status);
      expect(res.headers.get("content-type")).toMatch(/^application\/json/);
      expect(String((await json(res)).error)).toMatch(message);
    }
    // A 405 says which methods the path answers (RFC 9110 §15.5.6).
    expect((await server.fetch(`${server.url}/v1/runs`, { method: "DELETE" })).headers.get("allow")).toBe("GET, POST");
    expect((await server.fetch(`${server.url}/v1/team`, { method: "PUT" })).headers.get("allow")).toBe("GET");
    // None of them started a run.
    const list = await json(await server.fetch(`${server.url}/v1/runs`));
    expect(list.runs).toEqual([]);
  });
});

describe("runtime serve: queries and replay", () => {
  it("replays a stored run after Last-Event-ID, and answers run, list and trace queries", async () => {
    const server = await circleServer();
    const { response, events } = await postRun(server.url, { input: CIRCLE_QUESTION }, server.token);
    const taskId = response.headers.get("x-task-id")!;

    const replay = await server.fetch(`${server.url}/v1/runs/${taskId}/events`, { headers: { "last-event-id": "10" } });
    expect(replay.status).toBe(200);
    const newer = await readSse(replay);
    expect(newer.map((e) => e.data.seq)).toEqual(events.filter((e) => e.data.seq > 10).map((e) => e.data.seq));
    expect(newer.map((e) => e.data)).toEqual(events.filter((e) => e.data.seq > 10).map((e) => e.data));
    const all = await readSse(await server.fetch(`${server.url}/v1/runs/${taskId}/events`));
    expect(all).toHaveLength(events.length);

    const one = await json(await server.fetch(`${server.url}/v1/runs/${taskId}`));
    const summary = one.run as RunSummary;
    expect(summary).toMatchObject({ task_id: taskId, agent_id: "solver", input: CIRCLE_QUESTION, result_type: "answer" });
    expect(summary.answer).toMatch(/78\.54.*31\.42/);
    expect(one.live).toBe(false);
    expect((one.events as RunEvent[]).map((e) => e.seq)).toEqual(events.map((e) => e.data.seq));

    await postRun(server.url, { input: "a second run" }, server.token);
    const listed = (await json(await server.fetch(`${server.url}/v1/runs?agent=solver&limit=5`))).runs as RunSummary[];
    expect(listed).toHaveLength(2);
    expect(listed.map((r) => r.input)).toContain(CIRCLE_QUESTION);
    expect((await json(await server.fetch(`${server.url}/v1/runs?agent=nobody`))).runs).toEqual([]);
    expect((await json(await server.fetch(`${server.url}/v1/runs?limit=1`))).runs).toHaveLength(1);

    const traceId = events.find((e) => e.data.type === "recursion.started" && e.data.iteration === 2)!.data.trace_id!;
    const trace = await json(await server.fetch(`${server.url}/v1/traces/${traceId}`));
    const traceEvents = trace.events as RunEvent[];
    expect(traceEvents.length).toBeGreaterThan(2);
    expect(traceEvents.every((e) => e.trace_id === traceId)).toBe(true);
    expect(traceEvents.map((e) => e.type)).toContain("tool.finished");
  });

  it("a second client follows a live run from its first event to run.finished", async () => {
    const model = await startOpenAIServer({
      respond: (_body, index) =>
        index === 0
          ? {
              content: reactReply("CALL_TOOL", {}),
              tool_calls: [{ id: "c1", name: "calculator", arguments: { expression: "round(pi * 5^2, 2)" } }],
              delay_ms: 300,
            }
          : { content: reactReply("ANSWER", { answer: "area 78.54" }), delay_ms: 300 },
    });
    closers.push(model);
    const server = await serveTeam(openaiTeam(model.url));
    closers.push(server);

    const started = await server.fetch(`${server.url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "area of a circle of radius 5" }),
    });
    const taskId = started.headers.get("x-task-id")!;
    const poster = readSse(started);
    const running = await json(await server.fetch(`${server.url}/v1/runs/${taskId}`));
    expect(running.live).toBe(true);
    // The follower joins mid-run, asking for everything after event 1.
    const follower = await readSse(await server.fetch(`${server.url}/v1/runs/${taskId}/events`, { headers: { "last-event-id": "1" } }));
    const posted = await poster;
    expect(follower.map((e) => e.data)).toEqual(posted.slice(1).map((e) => e.data));
    expect(follower.at(-1)?.data).toMatchObject({ type: "run.finished", answer: "area 78.54" });
  });

  it("runs several requests at once, each with its own task", async () => {
    const server = await circleServer();
    const runs = await Promise.all([1, 2, 3].map(() => postRun(server.url, { input: CIRCLE_QUESTION }, server.token)));
    const ids = new Set(runs.map((r) => r.response.headers.get("x-task-id")));
    expect(ids.size).toBe(3);
    for (const { events } of runs) {
      expect(events.map((e) => e.data.seq)).toEqual(events.map((_, i) => i + 1));
      expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer" });
    }
  });
});

describe("runtime serve: cancellation and security", () => {
  it("cancels the run when the client disconnects; the stored trace ends with run.finished error interrupted", async () => {
    const model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "too late" }), delay_ms: 15_000 }) });
    closers.push(model);
    const server = await serveTeam(openaiTeam(model.url));
    closers.push(server);

    const controller = new AbortController();
    const response = await server.fetch(`${server.url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "slow question" }),
      signal: controller.signal,
    });
    const taskId = response.headers.get("x-task-id")!;
    const seen = await readSse(response, (e: Sse) => e.data.type === "llm.request");
    expect(seen.at(-1)?.data.type).toBe("llm.request");
    const leftAt = Date.now();
    controller.abort();

    const summary = await eventually(async () => {
      const body = await json(await server.fetch(`${server.url}/v1/runs/${taskId}`));
      const run = body.run as RunSummary;
      return run.finished_at ? body : undefined;
    });
    // Cancelled, not waited out: the model's reply was 15 s away.
    expect(Date.now() - leftAt).toBeLessThan(10_000);
    expect(summary.run).toMatchObject({ result_type: "error", error: "interrupted" });
    expect(summary.live).toBe(false);
    const events = summary.events as RunEvent[];
    expect(events.at(-1)).toMatchObject({ type: "run.finished", result_type: "error", error: "interrupted" });
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });

  it("never puts the API key or base URL in a response, and answers only localhost without CORS", async () => {
    const model = await startOpenAIServer({
      respond: (body) => ({ content: reactReply("ANSWER", { answer: `seen ${JSON.stringify(body.messages?.[0])} with ${SECRET}` }) }),
    });
    closers.push(model);
    const server = await serveTeam(openaiTeam(model.url));
    closers.push(server);

    // A page of another site is refused, its token or not (src/server/gate.ts); the server's own page is not.
    const foreign = await server.fetch(`${server.url}/v1/team`, { headers: { origin: "http://evil.example" } });
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get("access-control-allow-origin")).toBeNull();
    const team = await server.fetch(`${server.url}/v1/team`, { headers: { origin: server.url } });
    expect(team.headers.get("access-control-allow-origin")).toBeNull();
    const teamText = await team.text();
    expect(JSON.parse(teamText)).toMatchObject({ name: "serve-test", entry: "solver", agents: [{ name: "solver", kind: "react", tools: ["calculator"] }] });
    expect(teamText).not.toContain(SECRET);
    expect(teamText).not.toContain(model.url);

    const { response, events } = await postRun(server.url, { input: "echo" }, server.token);
    const taskId = response.headers.get("x-task-id")!;
    expect(events.at(-1)?.data.type).toBe("run.finished");
    const texts = [
      JSON.stringify(events),
      await (await server.fetch(`${server.url}/v1/runs/${taskId}`)).text(),
      await (await server.fetch(`${server.url}/v1/runs/${taskId}/events`)).text(),
      await (await server.fetch(`${server.url}/v1/runs`)).text(),
    ];
    for (const text of texts) {
      expect(text).toContain("[REDACTED]");
      expect(text).not.toContain(SECRET);
    }
    // The model really did receive the key: it is masked on the way out, not missing.
    expect(model.requests[0]?.headers.authorization).toBe(`Bearer ${SECRET}`);

    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${server.url}/v1/team`, { headers: { host: "rebound.evil.example" } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on("error", reject);
      req.end();
    });
    expect(status).toBe(403);
  });
});
