/**
 * `runtime mcp TEAM --http` (docs/mcp.md#over-streamable-http): the SDK's
 * own Client over StreamableHTTPClientTransport against the spawned CLI
 * (built dist/: `npm run build` first), behind the serve token.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { sqliteStore } from "../../src/store/sqlite/store.js";
import { BIN, ROOT, runCli } from "../support/cli.js";
import { startOpenAIServer } from "../support/openai-server.js";
import { approvalTeam, CIRCLE_QUESTION, eventually, parseSse, serveTeam } from "../support/runtime-server.js";
import { tempDir, writeTeam } from "../support/team.js";

const children: ChildProcess[] = [];
const clients: Client[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close().catch(() => undefined);
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const exited = new Promise((resolve) => child.once("close", resolve));
    child.kill("SIGTERM");
    await exited;
  }
});

/** Spawn `runtime mcp FILE --http --port 0` and resolve with its endpoint and the token it printed. */
async function spawnMcp(file: string, env: Record<string, string> = {}) {
  const traceDir = tempDir("runtime-mcp-http-");
  const child = spawn(process.execPath, [BIN, "mcp", file, "--http", "--port", "0", "--trace-dir", traceDir], {
    cwd: ROOT,
    env: { ...process.env, RUNTIME_SERVE_TOKEN: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stderr = "";
  const [url, token] = await new Promise<[string, string]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL within 30 s; stderr: ${stderr}`)), 30_000);
    child.stderr?.on("data", (d: Buffer) => {
      stderr += d.toString();
      const m = /on (http:\/\/127\.0\.0\.1:\d+\/mcp) [\s\S]*Bearer (.+)\n/.exec(stderr);
      if (m?.[1] && m[2]) {
        clearTimeout(timer);
        resolve([m[1], m[2]]);
      }
    });
  });
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  return { url, token, traceDir, child, exited, stderr: () => stderr };
}

async function connect(url: string, token: string | undefined): Promise<Client> {
  const client = new Client({ name: "test", version: "1" });
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  clients.push(client);
  return client;
}

describe("runtime mcp --http", { timeout: 90_000 }, () => {
  it("serves the team behind the printed token: list, call with progress notifications, the run traced", async () => {
    const served = await spawnMcp("teams/circle-react.yaml");
    expect(served.token).toMatch(/^[\w-]{43}$/);
    const client = await connect(served.url, served.token);
    expect(client.getServerVersion()).toMatchObject({ name: "circle-react" });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["solver"]);

    const progress: string[] = [];
    const result = await client.callTool({ name: "solver", arguments: { query: CIRCLE_QUESTION } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ""),
    });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: "text", text: "A circle of radius 5 m has an area of 78.54 m² and a circumference of 31.42 m." }]);
    expect(progress.slice(0, 3)).toEqual(["run started", "solver started (react)", "solver: round 1"]);
    expect(progress).toContain("solver calls calculator");
    expect(progress.at(-1)).toBe("run answered");

    // An ordinary run: in the trace directory's store, answered.
    const taskId = (result.structuredContent as { task_id: string }).task_id;
    const store = sqliteStore(served.traceDir);
    expect(await store.runs.run(taskId)).toMatchObject({ task_id: taskId, result_type: "answer", agent_id: "solver", input: CIRCLE_QUESTION });
    await store.close();
  });

  it("answers 401 without the token and with a wrong one; other paths 404, a session that is not 404", async () => {
    const served = await spawnMcp("teams/circle-react.yaml", { RUNTIME_SERVE_TOKEN: "mcp-token-0123456789abcdef" });
    expect(served.token).toBe("<your token>");
    await expect(connect(served.url, undefined)).rejects.toMatchObject({ code: 401, message: expect.stringContaining("a token is required") });
    await expect(connect(served.url, "wrong-token-0123456789")).rejects.toMatchObject({ code: 401 });
    const raw = await fetch(served.url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(raw.status).toBe(401);
    expect(raw.headers.get("www-authenticate")).toBe('Bearer realm="runtime"');

    const client = await connect(served.url, "mcp-token-0123456789abcdef");
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["solver"]);
    const auth = { authorization: "Bearer mcp-token-0123456789abcdef" };
    expect((await fetch(served.url.replace(/\/mcp$/, "/other"), { headers: auth })).status).toBe(404);
    // Without a session only an initialize may come; with an unknown one, 404 (the client starts a new session).
    expect((await fetch(served.url, { headers: { ...auth, accept: "text/event-stream" } })).status).toBe(400);
    expect((await fetch(served.url, { headers: { ...auth, accept: "text/event-stream", "mcp-session-id": "no-such-session" } })).status).toBe(404);
  });

  it("a run that needs an approval answers paused, saying how to continue it; runtime serve over its traces approves it", async () => {
    const file = approvalTeam();
    const served = await spawnMcp(file);
    const client = await connect(served.url, served.token);
    const result = await client.callTool({ name: "solver", arguments: { query: CIRCLE_QUESTION } });
    expect(result.isError).toBeFalsy();
    const { task_id } = result.structuredContent as { task_id: string };
    expect(result.structuredContent).toMatchObject({ result_type: "paused", waiting_for: ["calculator"] });
    expect((result.content as Array<{ text: string }>)[0]?.text).toBe(
      `run ${task_id} is paused, waiting for approval of calculator: decide with \`runtime approve ${task_id}\` (or the page and approvals API of \`runtime serve\`), then \`runtime resume ${task_id}\``,
    );

    // An ordinary run: runtime serve over the same trace directory lists it and its approvals API continues it.
    const server = await serveTeam(file, served.traceDir);
    try {
      const listed = (await (await server.fetch(`${server.url}/v1/runs`)).json()) as { runs: Array<{ task_id: string }> };
      expect(listed.runs.map((r) => r.task_id)).toContain(task_id);
      const decided = await server.fetch(`${server.url}/v1/runs/${task_id}/approvals`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ decision: "approve" }),
      });
      expect(await decided.json()).toMatchObject({ resumed: true });
      const events = parseSse(await (await server.fetch(`${server.url}/v1/runs/${task_id}/events`)).text()).map((e) => e.data);
      expect(events.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer", answer: expect.stringContaining("78.54") });
    } finally {
      await server.close();
    }
  });

  it("a client that goes away interrupts its run; stopping the command interrupts the rest and exits 0, traces kept", async () => {
    // A model that answers after 30 s: the runs are under way when they are interrupted.
    const model = await startOpenAIServer({ respond: () => ({ content: "late", delay_ms: 30_000 }) });
    try {
      const file = writeTeam(
        `version: 1
name: slow
models:
  default: { provider: openai, model: test-model, base_url: "${model.url}", api_key: sk-test-0123456789, max_retries: 0, timeout_ms: 60000 }
agents:
  solver: { kind: react }
`,
      );
      const served = await spawnMcp(file);
      const store = sqliteStore(served.traceDir);
      const running = async (n: number) => {
        const runs = await store.runs.listRuns();
        return runs.length === n && model.chatRequests.length === n ? runs : undefined;
      };

      const leaving = await connect(served.url, served.token);
      const abort = new AbortController();
      const call = leaving.callTool({ name: "solver", arguments: { query: "first" } }, undefined, { signal: abort.signal });
      const [first] = await eventually(() => running(1));
      abort.abort();
      await expect(call).rejects.toThrow();
      await eventually(async () => ((await store.runs.run(first!.task_id))?.result_type === "error" ? true : undefined));

      const staying = await connect(served.url, served.token);
      void staying.callTool({ name: "solver", arguments: { query: "second" } }).catch(() => undefined);
      const second = (await eventually(() => running(2))).find((r) => r.input === "second");
      served.child.kill("SIGTERM");
      expect(await served.exited).toBe(0);
      expect(await store.runs.run(second!.task_id)).toMatchObject({ result_type: "error", error: expect.stringMatching(/interrupted/) });
      expect(await store.runs.run(first!.task_id)).toMatchObject({ result_type: "error", error: expect.stringMatching(/interrupted/) });
      await store.close();
    } finally {
      await model.close();
    }
  });

  it("refuses to listen beyond loopback without a token of one's own", async () => {
    const r = await runCli(["mcp", "teams/circle-react.yaml", "--http", "--host", "0.0.0.0", "--port", "0"], { env: { RUNTIME_SERVE_TOKEN: "" } });
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      "runtime mcp: refusing to listen on 0.0.0.0 without a token of your own: give one with --token or RUNTIME_SERVE_TOKEN (and use --tls-cert/--tls-key or a TLS proxy beyond this machine)\n",
    );
  });
});
