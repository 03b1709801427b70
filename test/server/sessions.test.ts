/**
 * A session's runs over HTTP (docs/sessions.md): listed with
 * `GET /v1/runs?session=`, and streamed together, live, by
 * `GET /v1/sessions/:id/events` with `<task_id>:<seq>` ids and Last-Event-ID.
 */
import { afterEach, expect, it } from "vitest";
import { CIRCLE_QUESTION, postRun, readSse, serveTeam, type Sse } from "../support/runtime-server.js";

const closing: { close(): Promise<void> }[] = [];
afterEach(async () => {
  await Promise.all(closing.splice(0).map((s) => s.close()));
});

it("lists and streams the runs of a session, and resumes the stream after Last-Event-ID", async () => {
  const server = await serveTeam("teams/circle-react.yaml");
  closing.push(server);
  // Opened before any run: it shows the session's runs as they happen.
  const live = await server.fetch(`${server.url}/v1/sessions/chat-1/events`);
  expect(live.status).toBe(200);
  expect(live.headers.get("content-type")).toMatch(/^text\/event-stream/);
  const finished: string[] = [];
  const seen = readSse(live, (e) => {
    if (e.event === "run.finished") finished.push(e.id ?? "");
    return finished.length === 2;
  });

  const first = await postRun(server.url, { input: CIRCLE_QUESTION, session_id: "chat-1" }, server.token);
  await postRun(server.url, { input: CIRCLE_QUESTION, session_id: "other" }, server.token);
  const second = await postRun(server.url, { input: "And for a radius of 5 meters again?", session_id: "chat-1" }, server.token);
  const events = await seen;
  const tasks = [first.response.headers.get("x-task-id"), second.response.headers.get("x-task-id")];
  // Every event of both runs, in order, and nothing of the other session.
  expect([...new Set(events.map((e) => e.id?.split(":")[0]))]).toEqual(tasks);
  const ofFirst = events.filter((e) => e.id?.startsWith(`${tasks[0]}:`));
  expect(ofFirst.map((e) => e.id)).toEqual(first.events.map((e) => `${tasks[0]}:${e.id}`));

  const listed = (await (await server.fetch(`${server.url}/v1/runs?session=chat-1`)).json()) as { runs: { task_id: string }[] };
  expect(listed.runs.map((r) => r.task_id)).toEqual([tasks[1], tasks[0]]);

  // Reconnecting after the first run's end: the second run only, from its first event.
  const again = await server.fetch(`${server.url}/v1/sessions/chat-1/events`, { headers: { "last-event-id": finished[0]! } });
  const resumed: Sse[] = await readSse(again, (e) => e.event === "run.finished");
  expect(resumed[0]?.id).toBe(`${tasks[1]}:1`);
  expect(resumed.every((e) => e.id?.startsWith(`${tasks[1]}:`))).toBe(true);

  const bad = await server.fetch(`${server.url}/v1/sessions/${encodeURIComponent("a b")}/events`);
  expect(bad.status).toBe(400);
});
