/**
 * A2A in `runtime serve` (docs/protocols.md#a2a), driven by the official
 * SDK's client over HTTP: the card, sending, streaming, getting and
 * cancelling a task, the token, approvals as `input-required`.
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TaskState, type Task } from "@a2a-js/sdk";
import { afterEach, describe, expect, it } from "vitest";
import { a2aClient, artifactText, collect, userMessage } from "../support/a2a.js";
import { CIRCLE_QUESTION, approvalTeam, authedFetch, eventually, serveTeam, spawnServe } from "../support/runtime-server.js";
import { ROOT } from "../support/cli.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

const isTask = (r: unknown): r is Task => typeof r === "object" && r !== null && "status" in r && "artifacts" in r;

describe("A2A server", () => {
  it("serves the card without the token and runs tasks with it: send, get, stream; runs listed", async () => {
    const server = await serveTeam("teams/circle-react.yaml");
    closers.push(server);
    const card = await (await fetch(`${server.url}/.well-known/agent-card.json`)).json();
    expect(card).toMatchObject({
      name: "circle-react",
      supportedInterfaces: [{ url: `${server.url}/a2a`, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
      securitySchemes: { bearer: { httpAuthSecurityScheme: { scheme: "Bearer" } } },
      skills: [{ id: "solver", name: "solver" }],
    });

    // Without the token: the card is read, every call is refused.
    const anonymous = await a2aClient(server.url);
    await expect(anonymous.sendMessage(userMessage(CIRCLE_QUESTION))).rejects.toThrow(/401/);

    const client = await a2aClient(server.url, server.token);
    const sent = await client.sendMessage(userMessage(CIRCLE_QUESTION));
    if (!isTask(sent)) throw new Error(`expected a task, got ${JSON.stringify(sent)}`);
    expect(sent.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(sent)).toContain("78.54");

    // The task is the run: same id, listed, its session the task's context.
    const got = await client.getTask({ tenant: "", id: sent.id });
    expect(got).toMatchObject({ id: sent.id, contextId: sent.contextId, status: { state: TaskState.TASK_STATE_COMPLETED } });
    const runs = (await (await server.fetch(`${server.url}/v1/runs?session=${sent.contextId}`)).json()) as { runs: { task_id: string }[] };
    expect(runs.runs.map((r) => r.task_id)).toEqual([sent.id]);

    // Streaming, in the same context: a second run of the conversation.
    const stream = await collect(client.sendMessageStream(userMessage(CIRCLE_QUESTION, { contextId: sent.contextId })));
    const first = stream[0]?.payload;
    expect(first?.$case).toBe("task");
    const states = stream.flatMap((r) => (r.payload?.$case === "statusUpdate" ? [r.payload.value.status?.state] : []));
    expect(states).toContain(TaskState.TASK_STATE_WORKING);
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    const artifact = stream.find((r) => r.payload?.$case === "artifactUpdate");
    expect(JSON.stringify(artifact)).toContain("78.54");
    const streamedId = first?.$case === "task" ? first.value.id : "";
    const session = (await (await server.fetch(`${server.url}/v1/runs?session=${sent.contextId}`)).json()) as { runs: { task_id: string }[] };
    expect(session.runs.map((r) => r.task_id).sort()).toEqual([sent.id, streamedId].sort());

    await expect(client.getTask({ tenant: "", id: "no-such-task" })).rejects.toThrow(/not found/i);
    // Not JSON: JSON-RPC's parse error; not JSON-RPC: its invalid request.
    const post = (body: string) =>
      server.fetch(`${server.url}/a2a`, { method: "POST", headers: { "content-type": "application/json", "a2a-version": "1.0" }, body });
    expect(await (await post("{not json")).json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    expect(await (await post('{"jsonrpc": "2.0", "id": 7, "method": "NoSuchMethod", "params": {}}')).json()).toMatchObject({ id: 7, error: { code: -32601 } });
    // A message that starts no run is a rejected task that says why.
    const noText = await client.sendMessage(userMessage({ question: "?" }));
    expect(noText).toMatchObject({ status: { state: TaskState.TASK_STATE_REJECTED } });
    expect(JSON.stringify((noText as Task).status?.message)).toContain("the message has no text");
    const badAgent = await client.sendMessage({ ...userMessage("hi"), message: { ...userMessage("hi").message!, metadata: { agent: "nobody" } } });
    expect(JSON.stringify((badAgent as Task).status)).toContain("unknown agent 'nobody' (agents: solver)");
  });

  it("a run that spends the team's budget is a failed task, with the budget statement", async () => {
    const dir = tempDir("a2a-budget-");
    cpSync(join(ROOT, "teams"), dir, { recursive: true });
    const file = join(dir, "circle-react.yaml");
    writeFileSync(file, readFileSync(file, "utf8").replace("entry: solver\n", "entry: solver\nbudget: { max_model_calls: 1 }\n"));
    const server = await serveTeam(file);
    closers.push(server);
    const client = await a2aClient(server.url, server.token);
    const task = await client.sendMessage(userMessage(CIRCLE_QUESTION));
    if (!isTask(task)) throw new Error("expected a task");
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(JSON.stringify(task.status?.message)).toContain("budget reached: the team's max_model_calls is 1");
    expect(task.metadata).toMatchObject({ budget: { max_model_calls: { limit: 1 } } });
  });

  it("streams the answer as it is written: chunks appended to the answer artifact, then the whole answer", async () => {
    const dir = tempDir("a2a-stream-");
    cpSync(join(ROOT, "teams"), dir, { recursive: true });
    const file = join(dir, "circle-react.yaml");
    writeFileSync(file, readFileSync(file, "utf8").replace("provider: scripted\n", "provider: scripted\n    stream: true\n"));
    const server = await serveTeam(file);
    closers.push(server);
    const client = await a2aClient(server.url, server.token);
    const stream = await collect(client.sendMessageStream(userMessage(CIRCLE_QUESTION)));
    const updates = stream.flatMap((r) => (r.payload?.$case === "artifactUpdate" ? [r.payload.value] : []));
    const last = updates.at(-1)!;
    const answer = artifactText({ artifacts: [last.artifact!] } as Task);
    expect(answer).toBe("A circle of radius 5 m has an area of 78.54 m² and a circumference of 31.42 m.");
    expect(last).toMatchObject({ append: false, lastChunk: true });
    // Before it: the answer in pieces as the model wrote them, the first a new artifact, the rest appended.
    const chunks = updates.slice(0, -1);
    expect(chunks.length).toBeGreaterThan(3);
    expect(chunks.map((u) => u.append)).toEqual([false, ...chunks.slice(1).map(() => true)]);
    expect(chunks.every((u) => u.lastChunk === false && u.artifact?.artifactId === last.artifact?.artifactId)).toBe(true);
    expect(chunks.map((u) => artifactText({ artifacts: [u.artifact!] } as Task)).join("")).toBe(answer);
  });

  it("cancels a task that is going on", async () => {
    const slow = writeTeam(
      `version: 1
name: slow
description: Thinks for a long time.
models:
  offline: { provider: scripted, script: ./script.yaml }
agents:
  thinker: { kind: react, model: offline, tools: [terminate] }
`,
      {
        "script.yaml": `version: 1
replies:
  - content: '${reactReply("ANSWER", { answer: "too late" })}'
    delay_ms: 60000
`,
      },
    );
    const server = await serveTeam(slow);
    closers.push(server);
    const client = await a2aClient(server.url, server.token);
    const sent = await client.sendMessage({
      ...userMessage("think"),
      configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
    });
    if (!isTask(sent)) throw new Error("expected a task");
    const canceled = await client.cancelTask({ tenant: "", id: sent.id, metadata: {} });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    // The run stored its end before the answer: cancelled, as the run's own error says.
    const run = (await (await server.fetch(`${server.url}/v1/runs/${sent.id}`)).json()) as { live: boolean; events: { type: string; error_code?: string }[] };
    expect(run.live).toBe(false);
    expect(run.events.at(-1)).toMatchObject({ type: "run.finished", error_code: "ABORTED" });
    // Cancelling it again answers the same.
    await expect(client.cancelTask({ tenant: "", id: sent.id, metadata: {} })).resolves.toMatchObject({ status: { state: TaskState.TASK_STATE_CANCELED } });
  });

  it("a task whose server is killed is working, and its run resumes to completed like any other", async () => {
    const file = writeTeam(
      `version: 1
name: slow
models:
  offline: { provider: scripted, script: ./script.yaml }
agents:
  thinker: { kind: react, model: offline, tools: [terminate] }
`,
      { "script.yaml": `version: 1\nreplies:\n  - content: '${reactReply("ANSWER", { answer: "done thinking" })}'\n    delay_ms: 3000\n` },
    );
    const traceDir = tempDir("a2a-kill-");
    const { child, url, token, exited, output } = await spawnServe([file], { traceDir });
    let taskId = "";
    try {
      const client = await a2aClient(url, token);
      const sent = await client.sendMessage({
        ...userMessage("think"),
        configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately: true },
      });
      if (!isTask(sent)) throw new Error("expected a task");
      taskId = sent.id;
      // Killed while the model thinks.
      await eventually(async () => {
        const run = (await (await authedFetch(token)(`${url}/v1/runs/${taskId}`)).json()) as { events?: { type: string }[] };
        return run.events?.some((e) => e.type === "llm.request") ? true : undefined;
      });
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
    expect(output()).not.toMatch(/\n\s+at /);

    const server = await serveTeam(file, traceDir);
    closers.push(server);
    const client = await a2aClient(server.url, server.token);
    expect((await client.getTask({ tenant: "", id: taskId })).status?.state).toBe(TaskState.TASK_STATE_WORKING);
    expect((await server.fetch(`${server.url}/v1/runs/${taskId}/resume`, { method: "POST" })).status).toBe(202);
    const done = await eventually(async () => {
      const t = await client.getTask({ tenant: "", id: taskId });
      return t.status?.state === TaskState.TASK_STATE_COMPLETED ? t : undefined;
    });
    expect(artifactText(done)).toBe("done thinking");
  });

  it("a run waiting for approval is input-required; approve through A2A and through the approvals API", async () => {
    const server = await serveTeam(approvalTeam());
    closers.push(server);
    const client = await a2aClient(server.url, server.token);

    const paused = await client.sendMessage(userMessage(CIRCLE_QUESTION));
    if (!isTask(paused)) throw new Error("expected a task");
    expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(JSON.stringify(paused.status?.message)).toContain("call_area");
    // Not a decision: it still waits.
    const unclear = await client.sendMessage(userMessage("maybe", { taskId: paused.id, contextId: paused.contextId }));
    expect(unclear).toMatchObject({ id: paused.id, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED } });
    // One call approved by a data part: the other still waits.
    const one = await client.sendMessage(userMessage({ decision: "approve", call_id: "call_area" }, { taskId: paused.id, contextId: paused.contextId }));
    expect(one).toMatchObject({ id: paused.id, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED } });
    expect(JSON.stringify((one as Task).status?.message)).toContain("still waiting for approval of calculator (call call_circumference)");
    // Approved in the task (streaming): the run goes on to its answer.
    const stream = await collect(client.sendMessageStream(userMessage("approve", { taskId: paused.id, contextId: paused.contextId })));
    const states = stream.flatMap((r) => (r.payload?.$case === "statusUpdate" ? [r.payload.value.status?.state] : []));
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(artifactText(await client.getTask({ tenant: "", id: paused.id }))).toContain("78.54");

    // Through the approvals API, with a data part's decision refused as the task is no longer waiting.
    const second = await client.sendMessage(userMessage(CIRCLE_QUESTION));
    if (!isTask(second)) throw new Error("expected a task");
    expect(second.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const approved = await server.fetch(`${server.url}/v1/runs/${second.id}/approvals`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(approved.status).toBe(202);
    const done = await eventually(async () => {
      const t = await client.getTask({ tenant: "", id: second.id });
      return t.status?.state === TaskState.TASK_STATE_COMPLETED ? t : undefined;
    });
    expect(artifactText(done)).toContain("78.54");
    await expect(client.sendMessage(userMessage({ decision: "approve" }, { taskId: second.id, contextId: second.contextId }))).rejects.toThrow(
      /terminal state/,
    );
  });
});
