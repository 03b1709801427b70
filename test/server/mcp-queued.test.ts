/**
 * MCP at `/mcp` of `runtime serve` (docs/protocols.md#mcp), on one real
 * PostgreSQL with a spawned `runtime worker`: the MCP SDK's client, behind
 * the server's tokens, starts runs that go the one launch path, queued for
 * the worker, counted against the caller's `runs_max`, listed and owned by
 * the caller. Spawns the built CLI: run `npm run build` first.
 */
import { randomBytes } from "node:crypto";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it, vi } from "vitest";
import { spawnRuntime, type Spawned } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { usePostgres } from "../support/postgres.js";
import { authedFetch, eventually, spawnServe } from "../support/runtime-server.js";
import { reactReply, writeTeam } from "../support/team.js";
import { tokensFile } from "../support/tokens.js";

vi.setConfig({ testTimeout: 120_000, hookTimeout: 60_000 });

const postgres = usePostgres();

const spawned: Spawned[] = [];
const closers: (Client | OpenAIServer)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c.close().catch(() => undefined);
  for (const s of spawned.splice(0)) await s.stop();
});

async function connect(url: string, token: string | undefined): Promise<Client> {
  const client = new Client({ name: "test", version: "1" });
  const headers: Record<string, string> = token === undefined ? {} : { authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { requestInit: { headers } }));
  closers.push(client);
  return client;
}

describe("MCP at /mcp of runtime serve on PostgreSQL", () => {
  it("needs the token; a call's run is queued for a worker, counted against runs_max, listed and owned by its caller", async () => {
    // Each answer takes a while: the first run is still going when the second call comes.
    const model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "answered by a worker" }), delay_ms: 1_500 }) });
    closers.push(model);
    const team = writeTeam(`version: 1
name: queued-mcp
models:
  default: { provider: openai, model: m, base_url: "${model.url}", api_key: sk-test-0123456789, max_retries: 0, timeout_ms: 60000 }
agents:
  solver: { kind: react }
`);
    const tokens = { alice: randomBytes(24).toString("base64url"), root: randomBytes(24).toString("base64url") };
    const file = tokensFile([
      { name: "alice", token: tokens.alice, scopes: ["run", "read"], runs_max: 1 },
      { name: "root", token: tokens.root, scopes: ["admin"] },
    ]);
    const store = await postgres.createDatabase("mcp_queued");
    const server = await spawnServe([team, "--store", store, "--tokens", file]);
    spawned.push(server);
    const worker = await spawnRuntime(["worker", team, "--store", store, "--concurrency", "2"], {}, /takes runs of/);
    spawned.push(worker);

    await expect(connect(server.url, undefined)).rejects.toMatchObject({ code: 401 });
    const alice = await connect(server.url, tokens.alice);
    expect((await alice.listTools()).tools.map((t) => t.name)).toEqual(["solver"]);

    const first = alice.callTool({ name: "solver", arguments: { query: "first question" } });
    await eventually(async () => (model.chatRequests.length >= 1 ? true : undefined), 30_000);
    // Her one run in progress is her runs_max: a second call is refused, and nothing more is queued.
    const second = await (await connect(server.url, tokens.alice)).callTool({ name: "solver", arguments: { query: "second question" } });
    expect(second.isError).toBe(true);
    expect(JSON.stringify(second.content)).toMatch(/caller alice has 1 runs in progress, its runs_max/);

    const result = await first;
    expect(result.isError).toBeFalsy();
    const { task_id, result_type, answer } = result.structuredContent as { task_id: string; result_type: string; answer: string };
    expect({ result_type, answer }).toEqual({ result_type: "answer", answer: "answered by a worker" });
    // The worker ran it, not the server.
    expect(worker.output()).toContain(`running run ${task_id}`);
    // An ordinary run: listed for its owner, with her name, and the second call left no run.
    const listed = (await (await authedFetch(tokens.alice)(`${server.url}/v1/runs`)).json()) as { runs: { task_id: string; caller: string; input: string }[] };
    expect(listed.runs).toEqual([expect.objectContaining({ task_id, caller: "alice", input: "first question" })]);
    expect(model.chatRequests).toHaveLength(1);
  });
});
