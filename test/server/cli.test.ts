import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText } from "ai";
import OpenAI from "openai";
import { createServer, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { startOpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";
import { TaskState, type Task } from "@a2a-js/sdk";
import { EventSource } from "eventsource";
import { a2aClient, artifactText, collect, userMessage } from "../support/a2a.js";
import { approvalTeam, authedFetch, CIRCLE_QUESTION, eventually, postRun, readSse, spawnServe } from "../support/runtime-server.js";

// Spawns the built CLI: run `npm run build` first (npm test does).
const holders: Server[] = [];
const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (holders.length) await new Promise((r) => holders.pop()?.close(r));
  while (closers.length) await closers.pop()?.close();
});

describe("runtime serve (spawned)", () => {
  it("exits 2 with every problem of a bad team file", async () => {
    const file = writeTeam("version: 1\nname: broken\nagents:\n  solver:\n    kind: react\n    max_iteration: -3\n    tools: [no_such_tool]\n");
    const result = await runCli(["serve", file, "--port", "0"]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/team\.yaml:\d+:\d+ \/agents\/solver\/max_iteration/);
    expect(result.stderr).toMatch(/no_such_tool/);
    expect(result.stderr).not.toMatch(/\n\s+at /); // no stack trace
  });

  it("exits 1 with a clear message when the port is in use, and 2 on a bad --port", async () => {
    const holder = createServer();
    holders.push(holder);
    const port = await new Promise<number>((resolve) => holder.listen(0, "127.0.0.1", () => resolve((holder.address() as { port: number }).port)));
    const busy = await runCli(["serve", "teams/circle-react.yaml", "--port", String(port), "--trace-dir", tempDir()], { timeoutMs: 30_000 });
    expect(busy.code).toBe(1);
    expect(busy.stderr).toContain(`port ${port} is already in use on 127.0.0.1`);

    const bad = await runCli(["serve", "teams/circle-react.yaml", "--port", "http"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--port must be an integer/);
  });

  it("prints its URL on stderr, serves a run, and stops on SIGTERM with exit 0", async () => {
    const { child, url, token, exited, output, fetch } = await spawnServe(["teams/circle-react.yaml"]);
    try {
      const page = await fetch(`${url}/`);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(page.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(await page.text()).toContain('<script type="module" src="/app.js">');
      // The projection's compiled modules (docs/design/projection.md), and no other module of dist/events/.
      const projection = await fetch(`${url}/events/projection.js`);
      expect(projection.headers.get("content-type")).toMatch(/^text\/javascript/);
      expect(projection.headers.get("content-security-policy")).toContain("script-src 'self'");
      expect(await projection.text()).toContain("export class RunProjection");
      expect((await fetch(`${url}/events/bus.js`)).status).toBe(404);
      const { events } = await postRun(url, { input: CIRCLE_QUESTION }, token);
      expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer" });
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(output()).toContain("stopping");
  });

  it("serves the team to the openai client and the AI SDK over its OpenAI-compatible endpoints, streaming and not, the serve token as the API key", async () => {
    const { child, url, token, exited } = await spawnServe(["teams/circle-react.yaml"]);
    try {
      const answer = "A circle of radius 5 m has an area of 78.54 m² and a circumference of 31.42 m.";
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: token, maxRetries: 0 });
      expect((await client.models.list()).data.map((m) => m.id)).toContain("circle-react");
      const completion = await client.chat.completions.create({ model: "circle-react", messages: [{ role: "user", content: CIRCLE_QUESTION }] });
      expect(completion.choices[0]?.message.content).toBe(answer);
      let streamed = "";
      const stream = await client.chat.completions.create({
        model: "circle-react",
        messages: [{ role: "user", content: CIRCLE_QUESTION }],
        stream: true,
        stream_options: { include_usage: true },
      });
      let usage: unknown;
      for await (const chunk of stream) {
        streamed += chunk.choices[0]?.delta.content ?? "";
        usage ??= chunk.usage ?? undefined;
      }
      expect(streamed).toBe(answer);
      expect(usage).toMatchObject({ total_tokens: expect.any(Number) });
      const sdk = createOpenAICompatible({ name: "runtime", baseURL: `${url}/v1`, apiKey: token });
      const { text } = await generateText({ model: sdk("circle-react"), prompt: CIRCLE_QUESTION, maxRetries: 0 });
      expect(text).toBe(answer);
      const wrong = new OpenAI({ baseURL: `${url}/v1`, apiKey: "not-the-token-0123456789", maxRetries: 0 });
      await expect(wrong.models.list()).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  });

  it("serves A2A (the SDK's client: card, 401, input-required approved in the task) and a detached run an EventSource follows to its 204", async () => {
    const { child, url, token, exited } = await spawnServe([approvalTeam()]);
    try {
      const card = (await (await fetch(`${url}/.well-known/agent-card.json`)).json()) as { name: string };
      expect(card.name).toBe("circle-react");
      await expect((await a2aClient(url)).sendMessage(userMessage(CIRCLE_QUESTION))).rejects.toThrow(/401/);
      const client = await a2aClient(url, token);
      const paused = (await client.sendMessage(userMessage(CIRCLE_QUESTION))) as Task;
      expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
      const approved = await collect(client.sendMessageStream(userMessage("approve", { taskId: paused.id, contextId: paused.contextId })));
      const states = approved.flatMap((r) => (r.payload?.$case === "statusUpdate" ? [r.payload.value.status?.state] : []));
      expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(artifactText(await client.getTask({ tenant: "", id: paused.id }))).toContain("78.54");

      // Detached: 202, approved through the approvals API, followed by an EventSource to its end, then 204.
      const fetchAuthed = authedFetch(token);
      const started = await fetchAuthed(`${url}/v1/runs`, {
        method: "POST",
        headers: { "content-type": "application/json", prefer: "respond-async" },
        body: JSON.stringify({ input: CIRCLE_QUESTION }),
      });
      expect(started.status).toBe(202);
      const { task_id, events } = (await started.json()) as { task_id: string; events: string };
      await eventually(async () => {
        const { run } = (await (await fetchAuthed(`${url}/v1/runs/${task_id}`)).json()) as { run?: { result_type?: string } };
        return run?.result_type === "paused" ? true : undefined;
      });
      const decided = await fetchAuthed(`${url}/v1/runs/${task_id}/approvals`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ decision: "approve" }),
      });
      expect(decided.status).toBe(202);
      const statuses: number[] = [];
      const source = new EventSource(`${url}${events}`, {
        fetch: async (input, init) => {
          const headers = new Headers(init?.headers);
          headers.set("authorization", `Bearer ${token}`);
          const response = await fetch(input, { ...init, headers });
          statuses.push(response.status);
          return response;
        },
      });
      const answers: string[] = [];
      source.addEventListener("run.finished", (e) => {
        const finished = JSON.parse((e as MessageEvent).data as string) as { result_type: string; answer?: string };
        if (finished.result_type === "answer") answers.push(finished.answer ?? "");
      });
      await new Promise<void>((resolve) => {
        source.onerror = () => {
          if (source.readyState === EventSource.CLOSED) resolve();
        };
      });
      expect(answers.join("")).toContain("78.54");
      expect(statuses.at(-1)).toBe(204);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
  });

  it("a run started by an OpenAI client, its server killed mid-run, resumes to its answer like any other run", async () => {
    const file = writeTeam(
      `version: 1
name: slow
models:
  offline: { provider: scripted, script: ./script.yaml }
agents:
  thinker: { kind: react, model: offline }
`,
      { "script.yaml": `version: 1\nreplies:\n  - content: '${reactReply("ANSWER", { answer: "done thinking" })}'\n    delay_ms: 3000\n` },
    );
    const traceDir = tempDir("openai-kill-");
    const { child, url, token, exited, output } = await spawnServe([file], { traceDir });
    let taskId = "";
    try {
      const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: token, maxRetries: 0 });
      const { response } = await client.chat.completions.create({ model: "slow", messages: [{ role: "user", content: "think" }], stream: true }).withResponse();
      taskId = response.headers.get("x-task-id") ?? "";
      await eventually(async () => {
        const run = (await (await authedFetch(token)(`${url}/v1/runs/${taskId}`)).json()) as { events?: { type: string }[] };
        return run.events?.some((e) => e.type === "llm.request") ? true : undefined;
      });
    } finally {
      child.kill("SIGKILL");
      await exited;
    }
    expect(output()).not.toMatch(/\n\s+at /);
    const again = await spawnServe([file], { traceDir });
    try {
      const listed = (await (await again.fetch(`${again.url}/v1/runs`)).json()) as { runs: { task_id: string }[] };
      expect(listed.runs.map((r) => r.task_id)).toContain(taskId);
      expect((await again.fetch(`${again.url}/v1/runs/${taskId}/resume`, { method: "POST" })).status).toBe(202);
      const answered = await eventually(async () => {
        const { run } = (await (await again.fetch(`${again.url}/v1/runs/${taskId}`)).json()) as { run?: { result_type?: string; answer?: string } };
        return run?.result_type === "answer" ? run : undefined;
      }, 20_000);
      expect(answered.answer).toBe("done thinking");
    } finally {
      again.child.kill("SIGTERM");
      await again.exited;
    }
  });

  it("on SIGTERM cancels the runs in progress, whose streams end with run.finished error interrupted", async () => {
    const model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "late" }), delay_ms: 20_000 }) });
    closers.push(model);
    const file = writeTeam(`version: 1
name: slow
models:
  default: { provider: openai, model: test-model, base_url: "${model.url}", api_key: sk-test-slow-0123456789, max_retries: 0 }
agents:
  solver: { kind: react, tools: [calculator] }
`);
    const { child, url, exited, fetch } = await spawnServe([file]);
    const response = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ input: "slow" }),
    });
    let signalled = false;
    const events = await readSse(response, (e) => {
      if (e.data.type === "llm.request" && !signalled) {
        signalled = true;
        child.kill("SIGTERM");
      }
    });
    expect(signalled).toBe(true);
    expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "error", error: "interrupted" });
    expect(await exited).toBe(0);
  });
});
