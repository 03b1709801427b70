/**
 * Sandboxed command tools (docs/security.md#sandboxes): the program runs under
 * the real bubblewrap; what it may touch is tried from inside it.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { McpToolConfig } from "../../src/config/types.js";
import { commandTool } from "../../src/tools/command.js";
import { McpServers } from "../../src/tools/mcp/servers.js";
import { ROOT } from "../support/cli.js";
import { requireComponent } from "../support/components.js";
import { FS_SERVER } from "../support/mcp-servers.js";
import { call, makeBox } from "../support/tools.js";

/** A program that tries what a sandbox must allow or stop, and says what happened. */
const PROBE = `
const fs = require("node:fs");
const net = require("node:net");
const [cwd, outside, extra, port] = process.argv.slice(2);
const tryWrite = (path) => { try { fs.writeFileSync(path, "x"); return "wrote"; } catch (e) { return e.code; } };
const socket = net.connect(Number(port), "127.0.0.1");
socket.on("connect", () => finish("connected"));
socket.on("error", (e) => finish(e.code));
function finish(network) {
  socket.destroy();
  process.stdout.write(JSON.stringify({
    cwd: tryWrite(cwd + "/made-inside.txt"),
    outside: tryWrite(outside + "/made-inside.txt"),
    extra: extra ? tryWrite(extra + "/made-inside.txt") : null,
    tmp: tryWrite("/tmp/sandbox-probe.txt"),
    network,
    env: Object.keys(process.env).sort(),
    pid: process.pid,
  }));
}
`;

function probeTool(dir: string, sandbox: { network: boolean; writable: string[] } | undefined, args: string[]) {
  writeFileSync(join(dir, "probe.cjs"), PROBE);
  return commandTool({
    type: "command",
    name: "probe",
    description: "tries the sandbox",
    parameters: { type: "object" },
    command: [process.execPath, join(dir, "probe.cjs"), ...args],
    cwd: dir,
    env: { GREETING: "hello" },
    timeout_ms: 20_000,
    max_output_bytes: 65_536,
    ...(sandbox ? { sandbox } : {}),
  });
}

async function listening(): Promise<{ port: number; close(): void }> {
  const server = createServer((s) => s.end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as { port: number }).port, close: () => server.close() };
}

describe("a sandboxed command tool", () => {
  requireComponent("bwrap");

  it("writes its working folder and a writable path, nothing else; a private /tmp, no network, only its entry's environment, its own PIDs", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-cwd-"));
    // Outside /tmp where the checkout is (the sandbox replaces /tmp with its own): the read-only root stops the write.
    mkdirSync(join(ROOT, ".tmp"), { recursive: true });
    const outside = mkdtempSync(join(ROOT, ".tmp", "sandbox-outside-"));
    const extra = mkdtempSync(join(tmpdir(), "sandbox-extra-"));
    const server = await listening();
    rmSync("/tmp/sandbox-probe.txt", { force: true });
    try {
      const { box } = makeBox([probeTool(dir, { network: false, writable: [extra] }, [dir, outside, extra, String(server.port)])]);
      const [outcome] = await box.run([call("probe", {})]);
      expect(outcome!.ok, JSON.stringify(outcome)).toBe(true);
      const seen = outcome!.result as Record<string, unknown>;
      expect(seen).toMatchObject({ cwd: "wrote", extra: "wrote", tmp: "wrote" });
      // Read-only (EROFS), or not there at all where the checkout itself lies under the sandbox's own /tmp (ENOENT).
      expect(["EROFS", "ENOENT"]).toContain(seen.outside);
      expect(existsSync(join(outside, "made-inside.txt"))).toBe(false);
      expect(readFileSync(join(dir, "made-inside.txt"), "utf8")).toBe("x");
      expect(() => readFileSync("/tmp/sandbox-probe.txt")).toThrow();
      expect(seen.network).not.toBe("connected");
      expect(seen.env).toEqual(expect.arrayContaining(["GREETING", "PATH"]));
      expect((seen.env as string[]).filter((k) => !["GREETING", "PATH", "HOME", "PWD"].includes(k) && !k.startsWith("RUNTIME_"))).toEqual([]);
      expect(seen.pid).toBeLessThan(10);

      // The same probe unconfined reaches the network: the sandbox, not the machine, stopped it.
      const { box: open } = makeBox([probeTool(dir, undefined, [dir, outside, extra, String(server.port)])]);
      const [free] = await open.run([call("probe", {})]);
      expect(free!.result).toMatchObject({ outside: "wrote", network: "connected" });
    } finally {
      rmSync("/tmp/sandbox-probe.txt", { force: true });
      server.close();
    }
  });

  it("with network: true reaches the network", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-net-"));
    const server = await listening();
    try {
      const { box } = makeBox([probeTool(dir, { network: true, writable: [] }, [dir, dir, "", String(server.port)])]);
      const [outcome] = await box.run([call("probe", {})]);
      expect(outcome!.result).toMatchObject({ network: "connected" });
    } finally {
      server.close();
    }
  });

  it("fails with a clear error where bubblewrap is missing, and never runs the program unconfined", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-missing-"));
    writeFileSync(join(dir, "ran.cjs"), 'require("node:fs").writeFileSync(__dirname + "/ran.txt", "x");');
    // A runtime whose PATH has no bwrap: the built module, in a process of its own.
    const script = `
      import { commandTool } from ${JSON.stringify(join(ROOT, "dist/tools/command.js"))};
      const tool = commandTool({ type: "command", name: "probe", description: "", parameters: { type: "object" },
        command: [process.execPath, ${JSON.stringify(join(dir, "ran.cjs"))}],
        cwd: ${JSON.stringify(dir)}, env: {}, timeout_ms: 5000, max_output_bytes: 1000, sandbox: { network: false, writable: [] } });
      try { await tool.execute({}, { signal: new AbortController().signal, call_id: "c", scope: {}, emit() {} }); console.log("ran"); }
      catch (e) { console.log(e.code + ": " + e.message); }`;
    const out = execFileSync(process.execPath, ["--input-type=module", "-e", script], { env: { PATH: "/nonexistent" }, encoding: "utf8" });
    expect(out.trim()).toBe(
      'TOOL_FAILED: command tool "probe" is sandboxed (sandbox:) and bubblewrap is not installed: install it (apt-get install bubblewrap) or remove sandbox:; it never runs unconfined',
    );
    expect(() => readFileSync(join(dir, "ran.txt"))).toThrow();
  });
});

describe("a sandboxed stdio MCP server", () => {
  requireComponent("bwrap");

  it("starts under bubblewrap, lists and serves its tools, and cannot write outside its folder", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-mcp-"));
    mkdirSync(join(ROOT, ".tmp"), { recursive: true });
    const servers = new McpServers(() => {});
    try {
      const config: McpToolConfig = {
        type: "mcp",
        name: "fs",
        description: "",
        timeout_ms: 10_000,
        max_output_bytes: 65_536,
        connect_timeout_ms: 15_000,
        server: { transport: "stdio", command: [process.execPath, FS_SERVER, dir, ROOT], cwd: dir, env: {}, sandbox: { network: false, writable: [] } },
      };
      const tools = await servers.tools(config, new AbortController().signal);
      const { box } = makeBox(tools);
      const [inside, outside] = await box.run([
        call("write_file", { path: join(dir, "inside.txt"), content: "ok" }, "w1"),
        call("write_file", { path: join(ROOT, ".tmp", "sandbox-mcp-outside.txt"), content: "no" }, "w2"),
      ]);
      expect(inside).toMatchObject({ ok: true });
      expect(readFileSync(join(dir, "inside.txt"), "utf8")).toBe("ok");
      // The server allows the folder; the sandbox's read-only root refuses the write all the same.
      expect(outside).toMatchObject({ ok: false });
      expect(outside!.error).toMatch(/EROFS|read-only|ENOENT/i);
      expect(existsSync(join(ROOT, ".tmp", "sandbox-mcp-outside.txt"))).toBe(false);
      const [pid] = await servers.pids();
      expect(pid).toBeGreaterThan(0);
    } finally {
      await servers.close();
    }
  });
});
