/**
 * The MCP client against real servers: the filesystem reference server and
 * our notes server over stdio, an SDK server over Streamable HTTP. Tools are
 * run through a real ToolBox, so arguments are validated as for any tool.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { McpToolConfig } from "../../../src/config/types.js";
import { McpServers } from "../../../src/tools/mcp/servers.js";
import { ROOT } from "../../support/cli.js";
import { call, leftoverPids, makeBox } from "../../support/tools.js";
import { FS_SERVER, NOTES_SERVER, newTag, processesWith, startHttpMcpServer, survivors, type HttpMcpServer } from "../../support/mcp-servers.js";

const pids = leftoverPids();
const open: McpServers[] = [];
const https: HttpMcpServer[] = [];
afterEach(async () => {
  for (const servers of open.splice(0)) await servers.close();
  for (const server of https.splice(0)) await server.close();
});

function stdio(name: string, command: string[], extra: Partial<McpToolConfig> & { env?: Record<string, string>; cwd?: string } = {}): McpToolConfig {
  const { env = {}, cwd = process.cwd(), ...rest } = extra;
  return {
    type: "mcp",
    name,
    description: "",
    timeout_ms: 10_000,
    max_output_bytes: 65_536,
    connect_timeout_ms: 15_000,
    server: { transport: "stdio", command, cwd, env },
    ...rest,
  };
}

function http(name: string, url: string, headers: Record<string, string> = {}): McpToolConfig {
  return {
    type: "mcp",
    name,
    description: "",
    timeout_ms: 10_000,
    max_output_bytes: 65_536,
    connect_timeout_ms: 10_000,
    server: { transport: "http", url, headers },
  };
}

function servers(onLost: (message: string) => void = () => {}): McpServers {
  const s = new McpServers(onLost);
  open.push(s);
  return s;
}

const never = new AbortController().signal;

describe("MCP client over stdio: the filesystem reference server", () => {
  it("lists the server's tools with their names, descriptions and schemas, and calls them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runtime-mcp-fs-"));
    writeFileSync(join(dir, "notes.txt"), "radius 5\n");
    const s = servers();
    const tools = await s.tools(stdio("fs", [process.execPath, FS_SERVER, dir], { cwd: dir }), never);
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(["read_text_file", "list_directory", "write_file", "search_files"]));
    const read = tools.find((t) => t.name === "read_text_file");
    expect(read?.description).toMatch(/Read the complete contents of a file/);
    expect(read?.parameters).toMatchObject({ type: "object", properties: { path: { type: "string" } }, required: ["path"] });
    expect(read?.parameters).not.toHaveProperty("$schema");
    expect(read).toMatchObject({ effect: "write", timeout_ms: 10_000, max_output_bytes: 65_536 });

    const { box, events } = makeBox(tools);
    const [content, listing, outside, invalid] = await box.run([
      call("read_text_file", { path: join(dir, "notes.txt") }, "c1"),
      call("list_directory", { path: "." }, "c2"),
      call("read_text_file", { path: "/etc/hostname" }, "c3"),
      call("read_text_file", { file: "notes.txt" }, "c4"),
    ]);
    // Structured content (the reference server sends {content}) comes back as it is.
    expect(content).toMatchObject({ ok: true, result: { content: "radius 5\n" } });
    expect(listing).toMatchObject({ ok: true, result: { content: "[FILE] notes.txt" } });
    // An isError result is the call's error, on one line.
    expect(outside?.ok).toBe(false);
    expect(outside?.error).toMatch(/^Access denied - path outside allowed directories/);
    // The server's schema is checked before anything is sent.
    expect(invalid).toMatchObject({ ok: false, error: "invalid arguments for read_text_file: / must have required property 'path'" });
    expect(events.filter((e) => e.type === "tool.finished")).toHaveLength(4);

    const [pid] = await s.pids();
    expect(pid).toBeGreaterThan(0);
    pids.push(pid as number);
    await s.close();
    expect(await survivors([pid as number])).toEqual([]);
  });

  it("offers only the tools named in mcp.tools, in that order, and names a missing one", async () => {
    const dir = mkdtempSync(join(tmpdir(), "runtime-mcp-fs-"));
    const s = servers();
    const tools = await s.tools(stdio("fs", [process.execPath, FS_SERVER, dir], { tools: ["list_directory", "read_text_file"] }), never);
    expect(tools.map((t) => t.name)).toEqual(["list_directory", "read_text_file"]);

    const tag = newTag();
    const missing = stdio("fs2", [process.execPath, FS_SERVER, dir, tag], { tools: ["read_text_file", "delete_everything"] });
    await expect(s.tools(missing, never)).rejects.toThrow(
      /^MCP server "fs2" did not start: it lists no tool named "delete_everything" \(mcp.tools\); it lists: read_file, read_text_file, /,
    );
    expect(await survivors(processesWith(tag))).toEqual([]);
  });

  it("starts a server once, however many agents ask at once", async () => {
    const tag = newTag();
    const s = servers();
    const config = stdio("notes", [process.execPath, NOTES_SERVER, tag]);
    const lists = await Promise.all([s.tools(config, never), s.tools(config, never), s.tools(config, never)]);
    expect(lists[0]).toBe(lists[1]);
    expect(processesWith(tag)).toHaveLength(1);
    await s.close();
    expect(await survivors(processesWith(tag))).toEqual([]);
  });
});

describe("MCP client over stdio: failures are one clear line and leave nothing running", () => {
  it("a program that does not exist", async () => {
    await expect(servers().tools(stdio("ghost", ["no-such-mcp-server-program"]), never)).rejects.toThrow(
      'MCP server "ghost" did not start: program not found: no-such-mcp-server-program',
    );
  });

  it("a server that exits before the handshake, with its stderr", async () => {
    await expect(servers().tools(stdio("notes", [process.execPath, NOTES_SERVER, "--exit-at-start"]), never)).rejects.toThrow(
      'MCP server "notes" did not start: exited with code 3 (stderr: notes server: cannot open the notes database)',
    );
  });

  it("a server that never answers: connect_timeout_ms", async () => {
    const tag = newTag();
    const started = Date.now();
    await expect(servers().tools(stdio("mute", [process.execPath, NOTES_SERVER, "--silent", tag], { connect_timeout_ms: 400 }), never)).rejects.toThrow(
      'MCP server "mute" did not start: no answer within 400 ms (connect_timeout_ms)',
    );
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await survivors(processesWith(tag), 3000)).toEqual([]);
  });

  it("a caller's signal stops its wait at once; close() stops the start", async () => {
    const tag = newTag();
    const s = servers();
    const controller = new AbortController();
    const waiting = s.tools(stdio("mute", [process.execPath, NOTES_SERVER, "--silent", tag]), controller.signal);
    setTimeout(() => controller.abort(), 200);
    await expect(waiting).rejects.toThrow('MCP server "mute": interrupted while starting');
    await s.close();
    expect(await survivors(processesWith(tag), 3000)).toEqual([]);
  });

  it("a server that dies mid-call: the call fails with how it ended, later calls too, and onLost is told once", async () => {
    const lost: string[] = [];
    const tag = newTag();
    const s = servers((m) => lost.push(m));
    const tools = await s.tools(stdio("notes", [process.execPath, NOTES_SERVER, tag]), never);
    const { box } = makeBox(tools);
    const [crash] = await box.run([call("crash", {})]);
    const message = 'MCP server "notes" exited with code 3 (stderr: notes server: crashing on purpose)';
    expect(crash).toMatchObject({ ok: false, error: message });
    const [after] = await box.run([call("note", { text: "hello" })]);
    expect(after).toMatchObject({ ok: false, error: message });
    expect(lost).toEqual([message]);
    expect(processesWith(tag)).toEqual([]);
  });

  it("a server that answers and exits at once: the call has its answer, and the progress read with it", async () => {
    const tools = await servers().tools(stdio("notes", [process.execPath, NOTES_SERVER]), never);
    const { box, events } = makeBox(tools);
    const [last] = await box.run([call("last_word", {})]);
    expect(last).toMatchObject({ ok: true, result: "bye" });
    expect(events.filter((e) => e.type === "tool.progress")).toMatchObject([{ tool: "last_word", message: "done", progress: 1, total: 1 }]);
  });

  it("what the server started dies with it when it is closed, even a process in its own session", async () => {
    const tag = newTag();
    const s = servers();
    const tools = await s.tools(stdio("notes", [process.execPath, NOTES_SERVER, tag]), never);
    const { box } = makeBox(tools);
    const [spawned] = await box.run([call("spawn_sleeper", {})]);
    const sleeper = (spawned!.result as { pid: number }).pid;
    pids.push(sleeper, ...processesWith(tag));
    expect(sleeper).toBeGreaterThan(0);
    await s.close();
    expect(await survivors([sleeper, ...processesWith(tag)])).toEqual([]);
  });

  it("a line on stdout that is not JSON-RPC is skipped, not fatal", async () => {
    const tools = await servers().tools(stdio("notes", [process.execPath, NOTES_SERVER, "--chatty"]), never);
    const { box } = makeBox(tools);
    const [noted] = await box.run([call("note", { text: "still talking" })]);
    expect(noted).toMatchObject({ ok: true, result: "noted: still talking" });
  });

  it("a runtime that exits without closing its servers (a second Ctrl-C) still ends their trees (built dist/)", async () => {
    const tag = newTag();
    const script = `
      import { McpServers } from ${JSON.stringify(join(ROOT, "dist/tools/mcp/servers.js"))};
      const config = ${JSON.stringify(stdio("notes", [process.execPath, NOTES_SERVER, tag]))};
      const tools = await new McpServers().tools(config, new AbortController().signal);
      const sleeper = await tools.find((t) => t.name === "spawn_sleeper").execute({}, { signal: new AbortController().signal });
      process.stdout.write(JSON.stringify(sleeper.pid));
      process.exit(130);`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 20_000 });
    expect(r.status).toBe(130);
    const sleeper = Number(r.stdout);
    pids.push(sleeper);
    expect(sleeper).toBeGreaterThan(0);
    expect(await survivors([sleeper, ...processesWith(tag)])).toEqual([]);
  });

  it("an error result keeps all of its text, on one line", async () => {
    const tools = await servers().tools(stdio("notes", [process.execPath, NOTES_SERVER]), never);
    const { box } = makeBox(tools);
    const [refused] = await box.run([call("refuse", {})]);
    expect(refused).toMatchObject({ ok: false, error: "the notes are locked by another user" });
  });
});

describe("MCP client over Streamable HTTP", () => {
  it("sends the headers, lists and calls the tools, structured content and errors included", async () => {
    const server = await startHttpMcpServer({ token: "calc-token-123456" });
    https.push(server);
    const s = servers();
    const tools = await s.tools(http("calc", server.url, { Authorization: "Bearer calc-token-123456" }), never);
    expect(tools.map((t) => [t.name, t.description])).toEqual([
      ["add", "Add two numbers."],
      ["whoami", "Say which Authorization header the request had."],
      ["fail", "Always fails."],
    ]);
    const { box } = makeBox(tools);
    const [sum, who, fail, bad] = await box.run([
      call("add", { a: 2, b: 40 }, "c1"),
      call("whoami", {}, "c2"),
      call("fail", {}, "c3"),
      call("add", { a: "2", b: 40 }, "c4"),
    ]);
    expect(sum).toMatchObject({ ok: true, result: { sum: 42 } });
    expect(who).toMatchObject({ ok: true, result: "you sent Bearer calc-token-123456" });
    expect(fail).toMatchObject({ ok: false, error: "calc-http is out of order" });
    expect(bad).toMatchObject({ ok: false, error: "invalid arguments for add: /a must be number" });
    expect(server.calls).toEqual(["add", "whoami", "fail"]);
    expect(server.authorizations.every((a) => a === "Bearer calc-token-123456")).toBe(true);
  });

  it("a refused token and an unreachable server are one line each", async () => {
    const server = await startHttpMcpServer({ token: "calc-token-123456" });
    https.push(server);
    await expect(servers().tools(http("calc", server.url, { Authorization: "Bearer wrong-token-000000" }), never)).rejects.toThrow(
      /^MCP server "calc" did not start: .*401/,
    );
    const url = server.url;
    await server.close();
    https.splice(0);
    const err = await servers()
      .tools(http("gone", url), never)
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    expect(err?.message).toMatch(/^MCP server "gone" did not start: .*(ECONNREFUSED|fetch failed)/);
    expect(err?.message).not.toContain("\n");
  });
});
