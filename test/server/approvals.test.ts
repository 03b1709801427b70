/**
 * Approvals through `runtime serve` (docs/durable-runs.md#approvals): a run
 * pauses on calls that need a person, `POST /v1/runs/:id/approvals` decides
 * and resumes it, `GET .../events` follows it on; `POST .../resume` goes on
 * with a stopped run. The page's Approve / Deny are tested in
 * test/server/browser.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/events/types.js";
import { CIRCLE_QUESTION, approvalTeam, parseSse, postRun, serveTeam } from "../support/runtime-server.js";

const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

describe("approvals through the server", () => {
  it("pauses, then approve and deny (with a reason) resume the run to its end, the denial told to the model", async () => {
    const server = await serveTeam(approvalTeam());
    closers.push(server);
    const { events } = await postRun(server.url, { input: CIRCLE_QUESTION }, server.token);
    const paused = events.at(-1)?.data;
    expect(paused).toMatchObject({ type: "run.finished", result_type: "paused" });
    const approvals = paused?.type === "run.finished" ? (paused.approvals ?? []) : [];
    expect(approvals.map((a) => a.call_id)).toEqual(["call_area", "call_circumference"]);
    const taskId = paused!.task_id;
    const decide = (body: unknown) =>
      server.fetch(`${server.url}/v1/runs/${taskId}/approvals`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });

    // The whole id: a part of it, which the CLI would take, names no run here.
    const part = await server.fetch(`${server.url}/v1/runs/${taskId.slice(-12)}/approvals`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: '{"decision": "approve"}',
    });
    expect(part.status).toBe(404);
    // One of two decided: nothing resumes yet.
    const first = await decide({ decision: "approve", call_id: "call_area" });
    expect(first.status).toBe(202);
    expect(await first.json()).toMatchObject({ resumed: false, waiting: [{ call_id: "call_circumference" }] });
    expect((await decide({ decision: "maybe" })).status).toBe(400);
    const second = await decide({ decision: "deny", approval_id: approvals[1]!.approval_id, reason: "compute it by hand" });
    expect(await second.json()).toMatchObject({ resumed: true, waiting: [] });

    const follow = await server.fetch(`${server.url}/v1/runs/${taskId}/events`, { headers: { "last-event-id": String(paused!.seq) } });
    const more = parseSse(await follow.text()).map((e) => e.data);
    expect(more[0]).toMatchObject({ type: "run.resumed", after_seq: paused!.seq });
    const finished = more.filter((e): e is Extract<RunEvent, { type: "tool.finished" }> => e.type === "tool.finished");
    expect(finished.find((e) => e.call_id === "call_area")).toMatchObject({ ok: true });
    expect(finished.find((e) => e.call_id === "call_circumference")).toMatchObject({ ok: false, error: "a person denied this call: compute it by hand" });
    // The scripted model was not written for a denial: whatever it does next, this segment of the run ends.
    expect(more.at(-1)).toMatchObject({ type: "run.finished" });

    // Approved, the same question runs to its answer.
    const { events: again2 } = await postRun(server.url, { input: CIRCLE_QUESTION }, server.token);
    const pausedAgain = again2.at(-1)!.data;
    const approveAll = await server.fetch(`${server.url}/v1/runs/${pausedAgain.task_id}/approvals`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(await approveAll.json()).toMatchObject({ resumed: true });
    const rest = parseSse(await (await server.fetch(`${server.url}/v1/runs/${pausedAgain.task_id}/events`)).text()).map((e) => e.data);
    // Without Last-Event-ID: the stored events first, then the resumed ones, each once.
    expect(rest.map((e) => e.seq)).toEqual(rest.map((_, i) => i + 1));
    expect(rest.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer", answer: expect.stringContaining("78.54") });

    // Nothing waits any more.
    expect((await decide({ decision: "approve" })).status).toBe(404);
    // Resuming a finished run changes nothing.
    const again = await server.fetch(`${server.url}/v1/runs/${taskId}/resume`, { method: "POST" });
    expect(again.status).toBe(202);
    const all = await (await server.fetch(`${server.url}/v1/runs/${taskId}`)).json();
    expect((all as { events: RunEvent[] }).events.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer" });
    expect((await server.fetch(`${server.url}/v1/runs/nope/resume`, { method: "POST" })).status).toBe(404);
    expect(
      (
        await server.fetch(`${server.url}/v1/runs/${taskId}/resume`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"budget": {"max_tokens": -1}}',
        })
      ).status,
    ).toBe(400);
  });
});
