/**
 * Runs that outlive their request (docs/protocols.md#runs-that-outlive-their-request):
 * `Prefer: respond-async` answers 202 with the task_id and the run goes on;
 * a real EventSource client (the `eventsource` package) follows it by its
 * named events to its end, reconnects with Last-Event-ID, and is told 204,
 * so it stops.
 */
import { EventSource } from "eventsource";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/events/types.js";
import type { RunSummary } from "../../src/store/runs.js";
import { CIRCLE_QUESTION, serveTeam } from "../support/runtime-server.js";

const closers: { close(): Promise<void> | void }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

describe("a run that outlives its request", () => {
  it("starts with Prefer: respond-async (202), is followed by an EventSource to its end, and a reconnect after it gets 204", async () => {
    const server = await serveTeam("teams/circle-react.yaml");
    closers.push(server);
    const started = await server.fetch(`${server.url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json", prefer: "respond-async" },
      body: JSON.stringify({ input: CIRCLE_QUESTION }),
    });
    expect(started.status).toBe(202);
    expect(started.headers.get("preference-applied")).toBe("respond-async");
    const { task_id, events } = (await started.json()) as { task_id: string; events: string };
    expect(started.headers.get("x-task-id")).toBe(task_id);

    // The request is over; the run is not: an EventSource with the token follows it.
    const requests: { lastEventId: string | null; status: number }[] = [];
    const source = new EventSource(`${server.url}${events}`, {
      fetch: async (input, init) => {
        const headers = new Headers(init?.headers);
        headers.set("authorization", `Bearer ${server.token}`);
        const response = await fetch(input, { ...init, headers });
        requests.push({ lastEventId: headers.get("last-event-id"), status: response.status });
        return response;
      },
    });
    closers.push(source);
    const seen: RunEvent[] = [];
    const closed = new Promise<void>((resolve) => {
      for (const type of ["run.started", "tool.finished", "run.finished"]) {
        source.addEventListener(type, (e) => seen.push(JSON.parse((e as MessageEvent).data as string) as RunEvent));
      }
      source.onerror = () => {
        if (source.readyState === EventSource.CLOSED) resolve();
      };
    });
    await closed;
    expect(seen[0]?.type).toBe("run.started");
    const finished = seen.at(-1);
    expect(finished?.type).toBe("run.finished");
    expect(finished).toMatchObject({ result_type: "answer" });
    expect(seen.filter((e) => e.type === "tool.finished").length).toBeGreaterThan(0);
    // The first connection read to the end; the reconnect carried the last id and was told there is no more.
    expect(requests[0]).toEqual({ lastEventId: null, status: 200 });
    expect(requests.at(-1)).toEqual({ lastEventId: String(finished?.seq), status: 204 });

    const listed = (await (await server.fetch(`${server.url}/v1/runs`)).json()) as { runs: RunSummary[] };
    expect(listed.runs.map((r) => r.task_id)).toContain(task_id);
  });

  it("answers 404 for the events of a run that never was, Last-Event-ID or not (a plain POST closed early still cancels: api.test.ts)", async () => {
    const server = await serveTeam("teams/circle-react.yaml");
    closers.push(server);
    for (const headers of [{}, { "last-event-id": "5" }] as Record<string, string>[]) {
      const missing = await server.fetch(`${server.url}/v1/runs/no-such-run/events`, { headers });
      expect(missing.status).toBe(404);
    }
  });
});
