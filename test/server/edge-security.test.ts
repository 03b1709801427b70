/**
 * The edge of `runtime serve` held against hostile callers (docs/security.md):
 * MCP sessions capped per caller, wrong tokens throttled per address, a
 * foreign Origin refused, sessions keyed by caller, lone surrogates replaced
 * at input, the agent card's URL never from a spoofed Host. In-process
 * servers over real sockets, the MCP SDK's client, the project's
 * OpenAI-compatible test model.
 */
import { request } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { SCOPES, sha256, type CallerEntry, type Scope } from "../../src/server/auth.js";
import { parseHost } from "../../src/server/gate.js";
import { startServer, type RunningServer, type ServerOptions } from "../../src/server/server.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { authedFetch, eventually, postRun } from "../support/runtime-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const closers: { close(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const c of closers.splice(0).reverse()) await c.close().catch(() => undefined);
});

const TOKENS = { alice: "alice-token-0123456789abcdef", bob: "bob-token-0123456789abcdefgh", root: "root-token-0123456789abcdef" };

function caller(name: keyof typeof TOKENS, scopes: readonly Scope[]): CallerEntry {
  return { name, scopes: new Set(scopes), digest: sha256(TOKENS[name]) };
}

/** A model that answers at once with what it was last told, so a test sees what reached it. */
async function echoModel(): Promise<OpenAIServer> {
  const model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "noted" }) }) });
  closers.push(model);
  return model;
}

async function serve(model: OpenAIServer, options: Partial<ServerOptions> = {}): Promise<RunningServer> {
  const team = await loadTeam(
    writeTeam(`version: 1
name: edge
models:
  default: { provider: openai, model: m, base_url: "${model.url}", api_key: sk-test-0123456789, max_retries: 0 }
agents:
  solver: { kind: react }
`),
  );
  const server = await startServer({
    team,
    traceDir: tempDir("edge-"),
    port: 0,
    callers: [caller("alice", ["run", "read"]), caller("bob", ["run", "read"]), caller("root", SCOPES)],
    ...options,
  });
  closers.push(server);
  return server;
}

async function mcpClient(server: RunningServer, token: string): Promise<Client> {
  const client = new Client({ name: "test", version: "1" });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  closers.push(client);
  return client;
}

/** A GET from a given local address (127.0.0.2 is another client of loopback) with a given Host: status and body. */
function getFrom(url: string, headers: Record<string, string>, localAddress = "127.0.0.1"): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers, localAddress }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (d: string) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the edge of runtime serve", { timeout: 60_000 }, () => {
  it("MCP sessions are capped per caller: bob's idle sessions make room among themselves and never lock alice out", async () => {
    const server = await serve(await echoModel(), { mcp: { sessions: { perCaller: 3, total: 4 } } });
    const bobs: Client[] = [];
    for (let i = 0; i < 6; i++) bobs.push(await mcpClient(server, TOKENS.bob));
    // Bob's newest three are open; his oldest made room for them and are gone (a client starts a new session on 404).
    expect((await bobs[5]!.listTools()).tools.map((t) => t.name)).toEqual(["solver"]);
    await expect(bobs[0]!.listTools()).rejects.toThrow();
    // Alice past the server's total: one of bob's idle sessions goes, not her initialize.
    const alice = await mcpClient(server, TOKENS.alice);
    const again = await mcpClient(server, TOKENS.alice);
    expect((await alice.listTools()).tools).toHaveLength(1);
    expect((await again.listTools()).tools).toHaveLength(1);
  });

  it("400 wrong tokens from one address get 429s, while a right token from another address works, and from the same one after the window", async () => {
    const server = await serve(await echoModel(), { authFailures: { max: 20, windowMs: 3_000 } });
    const url = `${server.url}/v1/runs`;
    const statuses = new Map<number, number>();
    for (let i = 0; i < 400; i++) {
      const { status } = await getFrom(url, { authorization: `Bearer wrong-guess-${i}-0123456789` });
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 401: 20, 429: 380 });
    // The guesser's address is refused whatever it presents, so a right guess looks like a wrong one.
    const refused = await getFrom(url, { authorization: `Bearer ${TOKENS.alice}` });
    expect(refused.status).toBe(429);
    expect(refused.body).toMatch(/too many wrong tokens/);
    expect((await getFrom(url, { authorization: `Bearer ${TOKENS.alice}` }, "127.0.0.2")).status).toBe(200);
    // Once its window has ended, the address is heard again.
    await eventually(async () => ((await getFrom(url, { authorization: `Bearer ${TOKENS.alice}` })).status === 200 ? true : undefined), 10_000);
  });

  it("refuses a request from a foreign Origin with the right token, MCP and API alike; the server's own origin is served", async () => {
    const server = await serve(await echoModel());
    const initialize = (origin: string) =>
      fetch(`${server.url}/mcp`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKENS.alice}`, origin, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          method: "initialize",
          params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
        }),
      });
    const foreign = await initialize("http://evil.example");
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get("mcp-session-id")).toBeNull();
    expect((await initialize(server.url)).status).toBe(200);
    expect((await authedFetch(TOKENS.alice)(`${server.url}/v1/runs`, { headers: { origin: "http://evil.example" } })).status).toBe(403);
  });

  it("a session is its caller's: bob naming alice's session starts his own conversation, and reads nothing of hers", async () => {
    const model = await echoModel();
    const server = await serve(model);
    const run = async (who: keyof typeof TOKENS, input: string) => {
      const { response, events } = await postRun(server.url, { input, session_id: "support-chat-1" }, TOKENS[who]);
      expect(response.status).toBe(200);
      return events.at(-1)!.data;
    };
    await run("alice", "My account number is 4242-ALICE.");
    await run("bob", "What was said before in this chat?");
    await run("alice", "Which account was it?");
    const seen = model.chatRequests.map((r) => JSON.stringify(r.body?.messages));
    // Bob's model call carries nothing of alice's turn; her second one does.
    expect(seen[1]).not.toContain("4242-ALICE");
    expect(seen[2]).toContain("4242-ALICE");
    expect(seen[2]).not.toContain("What was said before");
    const listed = (await (await authedFetch(TOKENS.bob)(`${server.url}/v1/runs?session=support-chat-1`)).json()) as { runs: { caller: string }[] };
    expect(listed.runs.map((r) => r.caller)).toEqual(["bob"]);
  });

  it("lone surrogates in a body become U+FFFD: the run and its events are valid Unicode, over the API and MCP", async () => {
    const server = await serve(await echoModel());
    const raw = '{"input": "half a pair \\ud800 and a stray \\udc00 end"}';
    const started = await fetch(`${server.url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKENS.alice}`, "content-type": "application/json" },
      body: raw,
    });
    const taskId = started.headers.get("x-task-id")!;
    await started.text();
    const text = await (await authedFetch(TOKENS.alice)(`${server.url}/v1/runs/${taskId}`)).text();
    expect(text).not.toMatch(/\\ud[89ab]|\\udc/i);
    const { run } = JSON.parse(text) as { run: { input: string } };
    expect(run.input).toBe("half a pair \uFFFD and a stray \uFFFD end");

    const client = await mcpClient(server, TOKENS.alice);
    const result = await client.callTool({ name: "solver", arguments: { query: "mcp \ud800 query" } });
    const mcpRun = (result.structuredContent as { task_id: string }).task_id;
    const stored = (await (await authedFetch(TOKENS.alice)(`${server.url}/v1/runs/${mcpRun}`)).json()) as { run: { input: string } };
    expect(stored.run.input).toBe("mcp \uFFFD query");
  });

  it("the agent card's URL comes from a strictly parsed Host, never a spoofed one", async () => {
    const server = await serve(await echoModel());
    const card = async (host: string) => getFrom(`${server.url}/.well-known/agent-card.json`, { host });
    const plain = await card(`localhost:${server.port}`);
    expect(plain.status).toBe(200);
    expect(plain.body).toContain(`"url":"http://localhost:${server.port}/a2a"`);
    for (const spoofed of ["127.0.0.1:1@evil.example", "127.0.0.1:1/evil.example", "127.0.0.1 evil.example"]) {
      const answer = await card(spoofed);
      expect(answer.status).toBeGreaterThanOrEqual(400);
      expect(answer.body).not.toContain("evil.example");
    }
    // The parser the gate and the card share takes a name or an address and a port, nothing else.
    expect(parseHost("127.0.0.1:1@evil.example")).toBeUndefined();
    expect(parseHost("evil.example:80#x")).toBeUndefined();
    expect(parseHost("[::1]:8787")).toEqual({ hostname: "[::1]", port: 8787 });
    expect(parseHost("Example.COM")).toEqual({ hostname: "example.com" });
  });
});
