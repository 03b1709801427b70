/**
 * Per-caller tokens (docs/server.md#authentication, docs/security.md#who-can-reach-what)
 * through a spawned `runtime serve --tokens FILE` and real HTTP: a run
 * belongs to the caller that started it, someone else's run is a 404 on
 * every route and protocol, scopes are enforced, an admin sees and decides
 * all, and no token reaches any output, event, stored byte or log.
 * Spawns the built CLI: run `npm run build` first.
 */
import { randomBytes } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { TaskState } from "@a2a-js/sdk";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import OpenAI from "openai";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { runCli, spawnRuntime, type Spawned } from "../support/cli.js";
import { a2aClient, userMessage } from "../support/a2a.js";
import { approvalTeam, authedFetch, CIRCLE_QUESTION, eventually, parseSse, postRun, readSse, spawnServe } from "../support/runtime-server.js";
import { tokensFile } from "../support/tokens.js";
import { tempDir } from "../support/team.js";

vi.setConfig({ testTimeout: 90_000 });

const spawned: Spawned[] = [];
afterEach(async () => {
  for (const s of spawned.splice(0)) await s.stop();
});

const newSecret = () => randomBytes(24).toString("base64url");

describe("runtime serve --tokens", () => {
  it("alice's run is 404 for bob and visible to an admin; bob cannot approve it; a read-only caller cannot start one; no token leaks anywhere", async () => {
    const tokens = { alice: newSecret(), bob: newSecret(), carol: newSecret(), reader: newSecret(), root: newSecret() };
    const file = tokensFile([
      { name: "alice", token_env: "ALICE_TOKEN", scopes: ["run", "read", "approve"] },
      { name: "bob", token: tokens.bob, scopes: ["run", "read", "approve"] },
      { name: "carol", token: tokens.carol, scopes: ["run", "read"] },
      { name: "reader", token: tokens.reader, scopes: ["read"] },
      { name: "root", token: tokens.root, scopes: ["admin"] },
    ]);
    const traceDir = tempDir("tokens-trace-");
    const server = await spawnServe([approvalTeam(), "--tokens", file], { traceDir, env: { ALICE_TOKEN: tokens.alice } });
    spawned.push(server);
    const as = (name: keyof typeof tokens) => authedFetch(tokens[name]);
    const { url } = server;
    const outputs: string[] = [];
    const text = async (response: Response) => {
      const body = await response.text();
      outputs.push(body);
      return body;
    };
    const json = async (response: Response) => JSON.parse(await text(response)) as Record<string, unknown>;

    // No token, or one of no caller: 401, told which token to send.
    const anonymous = await fetch(`${url}/v1/runs`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.text()).toMatch(/your own, of the tokens file/);
    expect((await authedFetch(newSecret())(`${url}/v1/runs`)).status).toBe(401);

    // Alice's run pauses for approval; its run.started names her, never her token.
    const { response, events } = await postRun(url, { input: CIRCLE_QUESTION, session_id: "alice-chat" }, tokens.alice);
    expect(response.status).toBe(200);
    outputs.push(JSON.stringify(events));
    expect(events[0]?.data).toMatchObject({ type: "run.started", caller: "alice" });
    const paused = events.at(-1)!.data;
    expect(paused).toMatchObject({ type: "run.finished", result_type: "paused" });
    const id = paused.task_id;
    const traceId = events.find((e) => e.data.trace_id !== undefined)!.data.trace_id!;

    // Bob: every route that names her run answers as if it did not exist.
    for (const path of [`/v1/runs/${id}`, `/v1/runs/${id}/events`, `/v1/traces/${traceId}`]) {
      expect({ path, status: (await as("bob")(`${url}${path}`)).status }).toEqual({ path, status: 404 });
    }
    const post = (who: keyof typeof tokens, path: string, body: unknown) =>
      as(who)(`${url}${path}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect((await post("bob", `/v1/runs/${id}/approvals`, { decision: "approve" })).status).toBe(404);
    expect((await post("bob", `/v1/runs/${id}/resume`, {})).status).toBe(404);
    // Nor can bob join her conversation: a session he names is his own (test/server/edge-security.test.ts).
    expect((await json(await as("bob")(`${url}/v1/runs`))).runs).toEqual([]);
    // Her conversation's stream: her run's events for her, nothing for bob (the stream stays open: read for a second).
    const sessionEvents = async (who: keyof typeof tokens) => {
      const seen: string[] = [];
      const response = await as(who)(`${url}/v1/sessions/alice-chat/events`, { signal: AbortSignal.timeout(1_000) });
      await readSse(response, (e) => void seen.push(e.data.type)).catch(() => undefined);
      return seen;
    };
    expect(await sessionEvents("alice")).toContain("run.started");
    expect(await sessionEvents("bob")).toEqual([]);
    // Over the OpenAI-compatible API: her response is not one bob may continue.
    const bobOpenAI = new OpenAI({ baseURL: `${url}/v1`, apiKey: tokens.bob, maxRetries: 0 });
    await expect(bobOpenAI.responses.create({ model: "solver", input: "go on", previous_response_id: `resp_${id}` })).rejects.toMatchObject({
      status: 404,
      code: "previous_response_not_found",
    });
    // Over A2A: her task is not found for bob, and bob's message in it decides nothing.
    const bobA2A = await a2aClient(url, tokens.bob);
    await expect(bobA2A.getTask({ tenant: "", id })).rejects.toThrow(/not found/i);
    await expect(bobA2A.sendMessage(userMessage("approve", { taskId: id, contextId: "alice-chat" }))).rejects.toThrow(/not found/i);

    // Carol may run and read her own runs, but not decide approvals, even her own.
    const carols = await postRun(url, { input: CIRCLE_QUESTION }, tokens.carol);
    const carolRun = carols.events.at(-1)!.data.task_id;
    const denied = await post("carol", `/v1/runs/${carolRun}/approvals`, { decision: "approve" });
    expect(denied.status).toBe(403);
    expect(((await json(denied)).error as string) ?? "").toMatch(/approve/);
    expect(((await json(await as("carol")(`${url}/v1/runs`))).runs as { task_id: string }[]).map((r) => r.task_id)).toEqual([carolRun]);

    // A read-only caller cannot start a run, over any protocol; it lists no one else's.
    expect((await post("reader", "/v1/runs", { input: "hi" })).status).toBe(403);
    const readerOpenAI = new OpenAI({ baseURL: `${url}/v1`, apiKey: tokens.reader, maxRetries: 0 });
    await expect(readerOpenAI.chat.completions.create({ model: "solver", messages: [{ role: "user", content: "hi" }] })).rejects.toMatchObject({
      status: 403,
    });
    const readerA2A = await a2aClient(url, tokens.reader);
    const rejected = await readerA2A.sendMessage(userMessage(CIRCLE_QUESTION));
    expect(rejected).toMatchObject({ status: { state: TaskState.TASK_STATE_REJECTED } });
    expect(JSON.stringify(rejected)).toMatch(/may not start or continue runs/);
    expect((await json(await as("reader")(`${url}/v1/runs`))).runs).toEqual([]);

    // The admin sees every run with its owner, and may decide hers.
    const all = (await json(await as("root")(`${url}/v1/runs`))).runs as { task_id: string; caller?: string }[];
    expect(all.map((r) => [r.task_id, r.caller]).sort()).toEqual(
      [
        [id, "alice"],
        [carolRun, "carol"],
      ].sort(),
    );
    expect((await as("root")(`${url}/v1/runs/${id}`)).status).toBe(200);
    expect((await as("root")(`${url}/v1/traces/${traceId}`)).status).toBe(200);
    const rootA2A = await a2aClient(url, tokens.root);
    expect(await rootA2A.getTask({ tenant: "", id })).toMatchObject({ id, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED } });

    // Alice decides her own run's approvals and follows it to its answer.
    const decided = await post("alice", `/v1/runs/${id}/approvals`, { decision: "approve" });
    expect(await json(decided)).toMatchObject({ resumed: true });
    const rest = parseSse(await text(await as("alice")(`${url}/v1/runs/${id}/events`, { headers: { "last-event-id": String(paused.seq) } })));
    expect(rest.at(-1)?.data).toMatchObject({ type: "run.finished", result_type: "answer" });

    // The page: opened with bob's token, its cookie is bob's, and the API through it shows bob's runs only.
    const opened = await fetch(`${url}/?token=${encodeURIComponent(tokens.bob)}`, { redirect: "manual" });
    expect(opened.status).toBe(303);
    const cookie = (opened.headers.get("set-cookie") ?? "").split(";")[0]!;
    const pageRuns = await fetch(`${url}/v1/runs`, { headers: { cookie } });
    expect((await json(pageRuns)).runs).toEqual([]);
    expect((await fetch(`${url}/v1/runs/${id}`, { headers: { cookie } })).status).toBe(404);

    // No token in any answer, event, stored file or line the server wrote.
    await server.stop();
    const stored = readdirSync(traceDir, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => readFileSync(join(e.parentPath, e.name)).toString("latin1"));
    expect(stored.length).toBeGreaterThan(0);
    const everything = [...outputs, ...stored, server.output()].join("\n");
    expect(everything).toContain("alice");
    for (const [name, token] of Object.entries(tokens)) expect({ name, leaked: everything.includes(token) }).toEqual({ name, leaked: false });
  });

  it("per-token limits: a caller's request rate and its runs at once, each caller apart", async () => {
    const tokens = { slow: newSecret(), busy: newSecret(), other: newSecret() };
    const file = tokensFile([
      { name: "slow", token: tokens.slow, scopes: ["read"], rate: 1 },
      { name: "busy", token: tokens.busy, scopes: ["run", "read"], runs_max: 1 },
      { name: "other", token: tokens.other, scopes: ["run", "read"] },
    ]);
    const server = await spawnServe([slowTeam(), "--tokens", file]);
    spawned.push(server);
    const { url } = server;

    // Rate 1 per second: a burst of two, then 429 with retry-after; another caller is not slowed.
    const slow = authedFetch(tokens.slow);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await slow(`${url}/v1/runs`)).status);
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    expect(statuses.slice(2)).toContain(429);
    const limited = await slow(`${url}/v1/runs`);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect((await authedFetch(tokens.other)(`${url}/v1/runs`)).status).toBe(200);

    // runs_max 1: a second run while the first goes on is 429; another caller's run starts.
    const start = (token: string) =>
      authedFetch(token)(`${url}/v1/runs`, {
        method: "POST",
        headers: { "content-type": "application/json", prefer: "respond-async" },
        body: JSON.stringify({ input: "take your time" }),
      });
    const first = await start(tokens.busy);
    expect(first.status).toBe(202);
    const second = await start(tokens.busy);
    expect(second.status).toBe(429);
    expect(await second.text()).toMatch(/runs_max/);
    expect((await start(tokens.other)).status).toBe(202);
    // Once it has finished (its stream ends a moment before the server lets go of it), the caller may start another.
    const { task_id } = (await first.json()) as { task_id: string };
    await parseSse(await (await authedFetch(tokens.busy)(`${url}/v1/runs/${task_id}/events`)).text());
    expect(await eventually(async () => ((await start(tokens.busy)).status === 202 ? true : undefined), 5_000)).toBe(true);
  });

  it("runtime mcp --http --tokens: a session is its opener's, needs the run scope, and its runs are recorded as the caller's", async () => {
    const tokens = { alice: newSecret(), bob: newSecret(), reader: newSecret() };
    const file = tokensFile([
      { name: "alice", token: tokens.alice, scopes: ["run"] },
      { name: "bob", token: tokens.bob, scopes: ["run"] },
      { name: "reader", token: tokens.reader, scopes: ["read"] },
    ]);
    const traceDir = tempDir("tokens-mcp-");
    const served = await spawnRuntime(
      ["mcp", "teams/circle-react.yaml", "--http", "--port", "0", "--tokens", file, "--trace-dir", traceDir],
      {},
      /on (http:\/\/127\.0\.0\.1:\d+\/mcp)/,
    );
    spawned.push(served);
    const connect = async (token: string) => {
      const client = new Client({ name: "test", version: "1" });
      const transport = new StreamableHTTPClientTransport(new URL(served.url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
      await client.connect(transport);
      return { client, transport };
    };
    await expect(connect(tokens.reader)).rejects.toThrow(/lacks the 'run' scope/);
    const alice = await connect(tokens.alice);
    const result = await alice.client.callTool({ name: "solver", arguments: { query: CIRCLE_QUESTION } });
    const taskId = (result.structuredContent as { task_id: string }).task_id;
    // Bob naming alice's session reaches nothing.
    const intrude = await authedFetch(tokens.bob)(served.url, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-session-id": alice.transport.sessionId ?? "" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(intrude.status).toBe(404);
    await alice.client.close();
    await served.stop();
    const store = sqliteStore(traceDir);
    expect(await store.runs.run(taskId)).toMatchObject({ task_id: taskId, caller: "alice" });
    await store.close();
    expect(served.output()).not.toContain(tokens.alice);
  });

  it("a tokens file with a plain token, an unknown scope, a duplicate name or an unset variable is refused in one located line each", async () => {
    const cases: [string, RegExp][] = [
      [
        "- name: a\n  token: s3cret-s3cret-s3cret\n  scopes: [run]\n",
        /tokens\.yaml:2:3 \/0\/token a token written in the file is refused: give its token_sha256/,
      ],
      [
        `- name: a\n  token_sha256: ${"ab".repeat(32)}\n  scopes: [run, sudo]\n`,
        /tokens\.yaml:3:\d+ \/0\/scopes\/1 unknown scope "sudo": expected one of run, read, approve, admin/,
      ],
      [
        `- { name: a, token_sha256: ${"ab".repeat(32)}, scopes: [run] }\n- { name: a, token_sha256: ${"cd".repeat(32)}, scopes: [read] }\n`,
        /tokens\.yaml:2:\d+ \/1\/name duplicate caller name 'a'/,
      ],
      ["- { name: a, token_env: NO_SUCH_TOKEN_VARIABLE, scopes: [run] }\n", /\/0\/token_env the variable NO_SUCH_TOKEN_VARIABLE is not set/],
      ["- { name: a, scopes: [run] }\n", /\/0 give exactly one of token_sha256/],
      ["name: a\n", /expected a list of callers/],
    ];
    for (const [text, message] of cases) {
      const file = join(tempDir("tokens-file-"), "tokens.yaml");
      writeFileSync(file, text);
      const result = await runCli(["serve", "teams/circle-react.yaml", "--port", "0", "--tokens", file]);
      expect({ text, code: result.code }).toEqual({ text, code: 2 });
      expect(result.stderr).toMatch(message);
      expect(result.stderr).not.toMatch(/\n\s+at /);
      expect(result.stderr).not.toContain("s3cret");
    }
    const both = await runCli(["serve", "teams/circle-react.yaml", "--token", "x".repeat(20), "--tokens", "t.yaml"]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/either --token or --tokens/);
  });
});

/** A team whose one scripted reply takes 1.5 s: a run that is still going when the next request comes. */
function slowTeam(): string {
  const dir = tempDir("slow-team-");
  writeFileSync(
    join(dir, "script.yaml"),
    `version: 1\nreplies:\n  - content: '${JSON.stringify({ observe: "", thought: "", action: { result: { action_type: "ANSWER", output: { answer: "done" } } } })}'\n    delay_ms: 1500\n`,
  );
  const file = join(dir, "team.yaml");
  writeFileSync(file, "version: 1\nname: slow\nmodels:\n  offline: { provider: scripted, script: ./script.yaml }\nagents:\n  solver: { kind: react }\n");
  return file;
}
