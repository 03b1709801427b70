/**
 * The command line (`npm run build` first): `runtime tools` starts a team's
 * MCP servers and lists each agent's tools; `runtime mcp` serves a team over
 * stdio to the SDK's own client; the example team runs offline.
 */
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, it } from "vitest";
import { BIN, ROOT, runCli } from "../../support/cli.js";
import { tempDir, writeTeam } from "../../support/team.js";
import { isAlive } from "../../support/tools.js";
import { FS_SERVER, NOTES_SERVER, newTag, processesWith, startHttpMcpServer, survivors, type HttpMcpServer } from "../../support/mcp-servers.js";

const QUESTION = "What are the area and circumference of a circle with radius 5 meters?";
// Each test spawns the CLI once or twice (seconds each on a loaded machine).
const clients: Client[] = [];
const https: HttpMcpServer[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.close();
  for (const s of https.splice(0)) await s.close();
});

/** An SDK client that spawns `runtime mcp ARGS...`. */
async function connect(args: string[]): Promise<{ client: Client; transport: StdioClientTransport; stderr: () => string }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [BIN, "mcp", ...args],
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", RUNTIME_TRACE_DIR: tempDir("runtime-mcp-serve-") },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
  const client = new Client({ name: "test-client", version: "1.0.0" });
  clients.push(client);
  await client.connect(transport);
  return { client, transport, stderr: () => stderr };
}

describe("runtime tools", { timeout: 90_000 }, () => {
  it("starts the servers, lists per agent the tools it would see, and stops them", async () => {
    const http = await startHttpMcpServer({ token: "calc-token-77aa55" });
    https.push(http);
    const tag = newTag();
    const file = writeTeam(
      `version: 1
name: listing
models:
  offline: { provider: scripted, script: ./script.yaml }
tools:
  fs:
    description: the team's folder
    mcp: { command: [node, ${JSON.stringify(FS_SERVER)}, ., "${tag}"], tools: [read_text_file, list_directory] }
  calc:
    mcp: { url: "${http.url}", headers: { Authorization: "Bearer calc-token-77aa55" }, tools: [add] }
agents:
  reader: { kind: react, tools: [fs, calculator] }
  adder: { kind: plan_and_solve, tools: [write_todos, calc, reader, terminate] }
`,
      { "script.yaml": "version: 1\nreplies: []\n" },
    );
    const r = await runCli(["tools", file], { timeoutMs: 60_000 });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const lines = r.stdout.split("\n");
    expect(lines[0]).toBe("reader (react)");
    expect(lines[1]).toMatch(/^ {2}read_text_file {2}\[mcp fs\] Read the complete contents of a file/);
    expect(lines[2]).toMatch(/^ {2}list_directory {2}\[mcp fs\] Get a detailed listing/);
    expect(lines[3]).toMatch(/^ {2}calculator {6}\[builtin\] Evaluate an arithmetic expression/);
    expect(lines.slice(4, 9)).toEqual([
      "adder (plan_and_solve)",
      "  write_todos  [kind] provided by the agent's kind, if it has one",
      "  add          [mcp calc] Add two numbers.",
      "  reader       [agent] Ask the 'reader' agent (react) and get its answer.",
      "  terminate    [builtin] Finish the task with the final answer for the user.",
    ]);
    expect(processesWith(tag)).toEqual([]);

    const json = await runCli(["tools", file, "--agent", "adder", "--json"], { timeoutMs: 60_000 });
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        agent: "adder",
        kind: "plan_and_solve",
        tools: [
          { name: "write_todos", description: "", source: "kind" },
          { name: "add", description: "Add two numbers.", source: "mcp calc" },
          { name: "reader", description: "Ask the 'reader' agent (react) and get its answer.", source: "agent" },
          { name: "terminate", description: "Finish the task with the final answer for the user.", source: "builtin" },
        ],
      },
    ]);
  });

  it("a server that does not start: exit 1 and one line, its secrets masked", async () => {
    const file = writeTeam(
      `version: 1
name: broken
models:
  offline: { provider: scripted, script: ./script.yaml }
tools:
  notes:
    mcp: { command: [node, ${JSON.stringify(NOTES_SERVER)}, --exit-at-start], env: { NOTES_TOKEN: notes-token-31337abc } }
agents:
  solver: { kind: react, tools: [notes] }
`,
      { "script.yaml": "version: 1\nreplies: []\n" },
    );
    const r = await runCli(["tools", file], { timeoutMs: 60_000 });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'runtime tools: MCP server "notes" did not start: exited with code 3 (stderr: notes server: cannot open the notes database with token [REDACTED])\n',
    );
    expect(r.stdout).toContain('solver (react)\n  error: MCP server "notes" did not start');
    expect(r.stdout).not.toContain("notes-token-31337abc");
  });

  it("the example team's tools", async () => {
    const r = await runCli(["tools", "teams/mcp-files.yaml"], { timeoutMs: 60_000 });
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n").map((l) => l.split("  [")[0]?.trim())).toEqual(["solver (react)", "list_directory", "read_text_file", "calculator", ""]);
  });
});

describe("the example team teams/mcp-files.yaml", { timeout: 90_000 }, () => {
  it("reads the radius through the filesystem server and answers, offline", async () => {
    const r = await runCli(["exec", "teams/mcp-files.yaml", "What are the area and circumference of the circle in the data folder?", "--events", "ndjson"], {
      timeoutMs: 60_000,
      env: { RUNTIME_TRACE_DIR: tempDir("runtime-mcp-example-") },
    });
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    const read = events.find((e) => e.type === "tool.finished" && e.tool === "read_text_file");
    expect(read).toMatchObject({ ok: true, result: { content: "Circle for the mcp-files example team.\nradius: 5 m\n" } });
    expect(events.at(-1)).toMatchObject({
      type: "run.finished",
      result_type: "answer",
      answer: "data/circle.txt describes a circle of radius 5 m: its area is 78.54 m² and its circumference 31.42 m.",
    });
  });
});

describe("runtime mcp", { timeout: 90_000 }, () => {
  it("serves teams/circle-react.yaml: the SDK client lists the entry agent, calls it and gets the circle answer with progress", async () => {
    const { client } = await connect(["teams/circle-react.yaml"]);
    expect(client.getServerVersion()).toMatchObject({ name: "circle-react" });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["solver"]);
    expect(tools[0]).toMatchObject({
      description: "Solves arithmetic word problems, one tool call per step.",
      inputSchema: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
    });

    const progress: string[] = [];
    const result = await client.callTool({ name: "solver", arguments: { query: QUESTION } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ""),
    });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: "text", text: "A circle of radius 5 m has an area of 78.54 m² and a circumference of 31.42 m." }]);
    expect(result.structuredContent).toMatchObject({ result_type: "answer", task_id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    expect(progress.slice(0, 3)).toEqual(["run started", "solver started (react)", "solver: round 1"]);
    expect(progress).toContain("solver calls calculator");
  });

  it("serves every agent, or only --agent; a run error is isError with the error", async () => {
    const file = writeTeam(
      `version: 1
name: two
models:
  offline: { provider: scripted, script: ./script.yaml }
agents:
  first: { kind: react, description: The first agent. }
  second: { kind: react }
`,
      { "script.yaml": "version: 1\nreplies: []\n" },
    );
    const all = await connect([file]);
    expect((await all.client.listTools()).tools.map((t) => [t.name, t.description])).toEqual([
      ["first", "The first agent."],
      ["second", "Ask the 'second' agent (react) of the team 'two' and get its answer."],
    ]);
    const failed = await all.client.callTool({ name: "second", arguments: { query: "hello" } });
    expect(failed.isError).toBe(true);
    expect((failed.content as Array<{ text: string }>)[0]?.text).toMatch(/^run failed: /);
    const bad = await all.client.callTool({ name: "first", arguments: { question: "no query" } });
    expect(bad.isError).toBe(true);

    const one = await connect([file, "--agent", "second"]);
    expect((await one.client.listTools()).tools.map((t) => t.name)).toEqual(["second"]);
  });

  it("writes nothing but JSON-RPC on stdout, and exits when the client closes stdin", async () => {
    const child = spawn(process.execPath, [BIN, "mcp", "teams/circle-react.yaml"], {
      cwd: ROOT,
      env: { ...process.env, RUNTIME_TRACE_DIR: tempDir("runtime-mcp-raw-") },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const send = (message: object) => child.stdin.write(`${JSON.stringify(message)}\n`);
    const lines = async (n: number) => {
      for (let i = 0; i < 1600 && stdout.split("\n").filter(Boolean).length < n; i++) await new Promise((r) => setTimeout(r, 25));
      return stdout.split("\n").filter(Boolean);
    };
    send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    });
    await lines(1);
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "solver", arguments: { query: QUESTION }, _meta: { progressToken: "p1" } } });
    for (let i = 0; i < 1600 && !stdout.includes('"id":2'); i++) await new Promise((r) => setTimeout(r, 25));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    child.stdin.end();
    expect(await exited).toBe(0);
    const messages = stdout
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { jsonrpc?: string; id?: number; method?: string });
    expect(messages.every((m) => m.jsonrpc === "2.0")).toBe(true);
    expect(messages.filter((m) => m.method === "notifications/progress").length).toBeGreaterThan(5);
    expect(JSON.stringify(messages.find((m) => m.id === 2))).toContain("78.54");
  });

  it("an unknown agent or a broken team file: exit 2 before serving", async () => {
    const r = await runCli(["mcp", "teams/circle-react.yaml", "--agent", "nobody"], { timeoutMs: 40_000 });
    expect(r).toMatchObject({ code: 2, stdout: "", stderr: "runtime mcp: unknown agent 'nobody' (agents: solver)\n" });
    const dir = tempDir();
    writeFileSync(join(dir, "bad.yaml"), "version: 1\nname: x\n");
    const bad = await runCli(["mcp", join(dir, "bad.yaml")], { timeoutMs: 40_000 });
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe("");
  });

  it("a team with an MCP server served over MCP: the inner server lives only while a call runs", async () => {
    const tag = newTag();
    const file = writeTeam(
      `version: 1
name: nested
models:
  offline: { provider: scripted, script: ./script.yaml }
tools:
  notes:
    mcp: { command: [node, ${JSON.stringify(NOTES_SERVER)}, "${tag}"] }
agents:
  solver: { kind: react, tools: [notes] }
`,
      {
        "script.yaml": `version: 1
replies:
  - content: null
    tool_calls: [{ id: w1, name: whoami, arguments: {} }]
  - content: "the notes server ran as {{result:w1.pid}}"
`,
      },
    );
    const { client } = await connect([file]);
    const result = await client.callTool({ name: "solver", arguments: { query: "who?" } });
    const text = (result.content as Array<{ text: string }>)[0]?.text ?? "";
    expect(text).toMatch(/^the notes server ran as \d+$/);
    const pid = Number(text.split(" ").at(-1));
    expect(await survivors([pid])).toEqual([]);
    expect(isAlive(pid)).toBe(false);
    expect(processesWith(tag)).toEqual([]);
  });
});
