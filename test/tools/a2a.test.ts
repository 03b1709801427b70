/**
 * A remote A2A agent as a tool (docs/protocols.md#a2a-agents-as-tools): a team
 * served by `runtime serve` calls another served team over A2A with the
 * SDK's client; a dead or stalling remote is the call's error, never a hang.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { TaskState, type Task } from "@a2a-js/sdk";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/events/types.js";
import { a2aClient, artifactText, userMessage } from "../support/a2a.js";
import { CIRCLE_QUESTION, eventually, postRun, serveTeam } from "../support/runtime-server.js";
import { reactReply, writeTeam } from "../support/team.js";

const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
  delete process.env["A2A_TEST_REMOTE_TOKEN"];
  delete process.env["A2A_TEST_SLOW_TOKEN"];
});

/** A team whose scripted agent asks the A2A agent `tool` once, then answers with what it said. */
function callerTeam(tool: string): string {
  return writeTeam(
    `version: 1
name: caller
description: Asks another team.
models:
  offline: { provider: scripted, script: ./script.yaml }
tools:
${tool}
agents:
  asker: { kind: react, model: offline, tools: [remote, terminate] }
`,
    {
      "script.yaml": `version: 1
replies:
  - content: '${reactReply("CALL_TOOL", {})}'
    tool_calls:
      - { id: call_remote, name: remote, arguments: { message: "${CIRCLE_QUESTION}" } }
  - content: '${reactReply("ANSWER", { answer: "The other team says: {{result:call_remote.result}}" })}'
`,
    },
  );
}

const finishedOf = (events: { data: RunEvent }[]) => events.map((e) => e.data).find((e) => e.type === "run.finished");
const toolFinished = (events: { data: RunEvent }[]) => events.map((e) => e.data).find((e) => e.type === "tool.finished");

describe("A2A agents as tools", () => {
  it("a served team calls another served team over A2A: the remote answer, its progress, both runs listed", async () => {
    const remote = await serveTeam("teams/circle-react.yaml");
    closers.push(remote);
    process.env["A2A_TEST_REMOTE_TOKEN"] = remote.token;
    const caller = await serveTeam(
      callerTeam(`  remote:\n    a2a: { url: "${remote.url}", headers: { Authorization: "Bearer \${A2A_TEST_REMOTE_TOKEN}" } }\n`),
    );
    closers.push(caller);

    // Through the caller's own A2A endpoint, as a third party would.
    const client = await a2aClient(caller.url, caller.token);
    const task = (await client.sendMessage(userMessage("ask the circle team"))) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(task)).toMatch(/The other team says: A circle of radius 5 m has an area of 78\.54/);

    const run = (await (await caller.fetch(`${caller.url}/v1/runs/${task.id}`)).json()) as { events: RunEvent[] };
    const progress = run.events.filter((e) => e.type === "tool.progress");
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.map((e) => (e.type === "tool.progress" ? e.message : ""))).toContain("solver calls calculator");
    // The token reached the remote (it answered), and never the caller's events.
    expect(JSON.stringify(run.events)).not.toContain(remote.token);
    const remoteRuns = (await (await remote.fetch(`${remote.url}/v1/runs`)).json()) as { runs: { answer?: string }[] };
    expect(remoteRuns.runs).toHaveLength(1);
    expect(remoteRuns.runs[0]?.answer).toContain("78.54");
    const callerRuns = (await (await caller.fetch(`${caller.url}/v1/runs`)).json()) as { runs: { task_id: string }[] };
    expect(callerRuns.runs.map((r) => r.task_id)).toEqual([task.id]);
  });

  it("without the remote's token, the call fails with a one-line error", async () => {
    const remote = await serveTeam("teams/circle-react.yaml");
    closers.push(remote);
    const caller = await serveTeam(callerTeam(`  remote:\n    a2a: { url: "${remote.url}" }\n`));
    closers.push(caller);
    const { events } = await postRun(caller.url, { input: "ask" }, caller.token);
    const finished = toolFinished(events);
    expect(finished).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^A2A agent at http:\/\/127\.0\.0\.1:\d+: \/a2a answered 401: a token is required/),
    });
    expect(finishedOf(events)).toMatchObject({ result_type: "answer" });
  });

  it("a dead remote is the call's error", async () => {
    const dead = createServer();
    await new Promise<void>((r) => dead.listen(0, "127.0.0.1", r));
    const port = (dead.address() as AddressInfo).port;
    await new Promise<void>((r) => dead.close(() => r()));
    const caller = await serveTeam(callerTeam(`  remote:\n    a2a: { url: "http://127.0.0.1:${port}" }\n`));
    closers.push(caller);
    const { events } = await postRun(caller.url, { input: "ask" }, caller.token);
    const error = (toolFinished(events) as { error?: string } | undefined)?.error ?? "";
    expect(error).toBe(`A2A agent at http://127.0.0.1:${port}: cannot reach 127.0.0.1:${port}: ECONNREFUSED`);
    expect(error).not.toContain("\n");
    expect(finishedOf(events)).toMatchObject({ result_type: "answer" });
  });

  it("a remote that never answers, or whose task goes on too long, times out; the remote task is cancelled", async () => {
    // Accepts connections and answers nothing, not even the card.
    const silent: Server = createServer(() => {});
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    closers.push({
      close: () => {
        silent.closeAllConnections();
        return new Promise<void>((r) => silent.close(() => r()));
      },
    });
    const mute = await serveTeam(
      callerTeam(`  remote:\n    timeout_ms: 500\n    a2a: { url: "http://127.0.0.1:${(silent.address() as AddressInfo).port}" }\n`),
    );
    closers.push(mute);
    const { events } = await postRun(mute.url, { input: "ask" }, mute.token);
    expect(toolFinished(events)).toMatchObject({ ok: false, error: "timed out after 500 ms" });

    // A served team that thinks for a minute.
    const slow = await serveTeam(
      writeTeam(
        `version: 1
name: slow
models:
  offline: { provider: scripted, script: ./script.yaml }
agents:
  thinker: { kind: react, model: offline, tools: [terminate] }
`,
        { "script.yaml": `version: 1\nreplies:\n  - content: '${reactReply("ANSWER", { answer: "too late" })}'\n    delay_ms: 60000\n` },
      ),
    );
    closers.push(slow);
    process.env["A2A_TEST_SLOW_TOKEN"] = slow.token;
    const caller = await serveTeam(
      callerTeam(`  remote:\n    timeout_ms: 1500\n    a2a: { url: "${slow.url}", headers: { Authorization: "Bearer \${A2A_TEST_SLOW_TOKEN}" } }\n`),
    );
    closers.push(caller);
    const second = await postRun(caller.url, { input: "ask" }, caller.token);
    expect(toolFinished(second.events)).toMatchObject({ ok: false, error: "timed out after 1500 ms" });
    // The remote run was cancelled, not left thinking.
    const cancelled = await eventually(async () => {
      const runs = (await (await slow.fetch(`${slow.url}/v1/runs`)).json()) as { runs: { result_type?: string; error?: string }[] };
      return runs.runs[0]?.result_type ? runs.runs[0] : undefined;
    });
    expect(cancelled).toMatchObject({ result_type: "error", error: "interrupted" });
  });
});
