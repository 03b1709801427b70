/**
 * Sandboxed command tools (docs/security.md#sandboxes): the program runs under
 * the real bubblewrap; what it may touch is tried from inside it.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
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

/** A fresh folder that the sandbox's user may read (as root, an unprivileged one): mkdtemp's are the owner's alone. */
function visibleDir(prefix: string, under = tmpdir(), mode = 0o755): string {
  const dir = mkdtempSync(join(under, prefix));
  chmodSync(dir, mode);
  return dir;
}

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

/**
 * A sandboxed call of a program that writes `dir`/ran.txt, made by the built
 * module in a process of its own, started by `launcher` with PATH `path`: what it printed.
 */
function sandboxedCallIn(dir: string, launcher: string[], path: string): string {
  writeFileSync(join(dir, "ran.cjs"), 'require("node:fs").writeFileSync(__dirname + "/ran.txt", "x");');
  const script = `
    import { commandTool } from ${JSON.stringify(join(ROOT, "dist/tools/command.js"))};
    const tool = commandTool({ type: "command", name: "probe", description: "", parameters: { type: "object" },
      command: [process.execPath, ${JSON.stringify(join(dir, "ran.cjs"))}],
      cwd: ${JSON.stringify(dir)}, env: {}, timeout_ms: 5000, max_output_bytes: 1000, sandbox: { network: false, writable: [] } });
    try { await tool.execute({}, { signal: new AbortController().signal, call_id: "c", scope: {}, emit() {} }); console.log("ran"); }
    catch (e) { console.log(e.code + ": " + e.message); }`;
  const argv = [...launcher, process.execPath, "--input-type=module", "-e", script];
  return execFileSync(argv[0]!, argv.slice(1), { env: { PATH: path }, encoding: "utf8" }).trim();
}

async function listening(): Promise<{ port: number; close(): void }> {
  const server = createServer((s) => s.end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { port: (server.address() as { port: number }).port, close: () => server.close() };
}

describe("a sandboxed command tool", () => {
  requireComponent("bwrap");

  it("writes its scratch /tmp and a writable path, nothing else: its working folder read-only, no network, only its entry's environment, its own PIDs", async () => {
    const dir = visibleDir("sandbox-cwd-");
    // Outside /tmp where the checkout is (the sandbox replaces /tmp with its own): the read-only root stops the write.
    mkdirSync(join(ROOT, ".tmp"), { recursive: true });
    const outside = visibleDir("sandbox-outside-", join(ROOT, ".tmp"));
    // Writable by anyone: as root the program runs as an unprivileged user, who must be able to write it.
    const extra = visibleDir("sandbox-extra-", tmpdir(), 0o777);
    const server = await listening();
    rmSync("/tmp/sandbox-probe.txt", { force: true });
    try {
      const { box } = makeBox([probeTool(dir, { network: false, writable: [extra] }, [dir, outside, extra, String(server.port)])]);
      const [outcome] = await box.run([call("probe", {})]);
      expect(outcome!.ok, JSON.stringify(outcome)).toBe(true);
      const seen = outcome!.result as Record<string, unknown>;
      expect(seen).toMatchObject({ cwd: "EROFS", extra: "wrote", tmp: "wrote" });
      expect(seen.outside).toBe("EROFS");
      expect(existsSync(join(outside, "made-inside.txt"))).toBe(false);
      expect(existsSync(join(dir, "made-inside.txt"))).toBe(false);
      expect(readFileSync(join(extra, "made-inside.txt"), "utf8")).toBe("x");
      expect(() => readFileSync("/tmp/sandbox-probe.txt")).toThrow();
      expect(seen.network).not.toBe("connected");
      expect(seen.env).toEqual(expect.arrayContaining(["GREETING", "PATH"]));
      expect((seen.env as string[]).filter((k) => !["GREETING", "PATH", "HOME", "PWD"].includes(k) && !k.startsWith("RUNTIME_"))).toEqual([]);
      expect(seen.pid).toBeLessThan(10);

      // The same probe unconfined writes both folders and reaches the network: the sandbox, not the machine, stopped it.
      const { box: open } = makeBox([probeTool(dir, undefined, [dir, outside, extra, String(server.port)])]);
      const [free] = await open.run([call("probe", {})]);
      expect(free!.result).toMatchObject({ cwd: "wrote", outside: "wrote", network: "connected" });
    } finally {
      rmSync("/tmp/sandbox-probe.txt", { force: true });
      server.close();
    }
  });

  it("as root, refuses a writable path its unprivileged user may not write, naming the fix; as another user, that user writes it", async () => {
    const dir = visibleDir("sandbox-own-");
    const owned = visibleDir("sandbox-owned-", tmpdir(), 0o755);
    const { box } = makeBox([probeTool(dir, { network: false, writable: [owned] }, [dir, dir, owned, "1"])]);
    const [outcome] = await box.run([call("probe", {})]);
    if (process.getuid?.() === 0) {
      expect(outcome!.ok).toBe(false);
      expect(outcome!.error).toBe(
        `command tool "probe" is sandboxed with writable: ${owned}, which uid 65534 may not write: the runtime runs as root, so sandboxed programs run as that unprivileged user. ` +
          `Give it the folder (chown 65534:65534 ${owned}) or run the runtime as an unprivileged user`,
      );
      expect(existsSync(join(owned, "made-inside.txt"))).toBe(false);
    } else {
      expect(outcome!.result).toMatchObject({ extra: "wrote" });
    }
  });

  it("with network: true reaches the network", async () => {
    const dir = visibleDir("sandbox-net-");
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
    // A runtime whose PATH has no bwrap.
    const out = sandboxedCallIn(dir, [], "/nonexistent");
    expect(out).toBe(
      'TOOL_FAILED: command tool "probe" is sandboxed (sandbox:) and bubblewrap is not installed: install it (apt-get install bubblewrap) or remove sandbox:; it never runs unconfined',
    );
    expect(() => readFileSync(join(dir, "ran.txt"))).toThrow();
  });

  it("fails with a clear error where bubblewrap cannot confine a program (no user namespace for it), and never runs the program unconfined", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-refused-"));
    // A runtime, not root, in a sandbox of its own that allows no further user namespace: its bubblewrap cannot make one.
    const outer = ["bwrap", "--unshare-user", "--uid", "1000", "--gid", "1000", "--disable-userns", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];
    const out = sandboxedCallIn(dir, [...outer, "--bind", dir, dir, "--"], "/usr/bin:/bin");
    expect(out).toMatch(
      /^TOOL_FAILED: command tool "probe" is sandboxed \(sandbox:\) and bubblewrap cannot confine a program here as this user \(bwrap: .+\): allow unprivileged user namespaces .*it never runs unconfined$/,
    );
    expect(() => readFileSync(join(dir, "ran.txt"))).toThrow();
  });
  it("fails with a clear error where the runtime is root in a user namespace without uid 65534, and never runs the program", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sandbox-unmapped-"));
    // A runtime that is root of a namespace mapping that one id alone: it has no unprivileged user to become.
    const outer = ["bwrap", "--unshare-user", "--uid", "0", "--gid", "0", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", dir, dir, "--"];
    expect(sandboxedCallIn(dir, outer, "/usr/bin:/bin")).toBe(
      'TOOL_FAILED: command tool "probe" is sandboxed (sandbox:) and the runtime runs as root in a user namespace without uid and gid 65534, the unprivileged user sandboxed programs run as: ' +
        "run the runtime as an unprivileged user, or give the namespace that id, or remove sandbox:; it never runs unconfined",
    );
    expect(() => readFileSync(join(dir, "ran.txt"))).toThrow();
  });
});

describe("a sandboxed stdio MCP server", () => {
  requireComponent("bwrap");

  it("starts under bubblewrap, lists and serves its tools, and writes only its writable folder", async () => {
    const dir = visibleDir("sandbox-mcp-");
    const out = visibleDir("out-", dir, 0o777);
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
        server: { transport: "stdio", command: [process.execPath, FS_SERVER, dir, ROOT], cwd: dir, env: {}, sandbox: { network: false, writable: [out] } },
      };
      const tools = await servers.tools(config, new AbortController().signal);
      const { box } = makeBox(tools);
      const [inside, own, outside] = await box.run([
        call("write_file", { path: join(out, "inside.txt"), content: "ok" }, "w1"),
        call("write_file", { path: join(dir, "own.txt"), content: "no" }, "w2"),
        call("write_file", { path: join(ROOT, ".tmp", "sandbox-mcp-outside.txt"), content: "no" }, "w3"),
      ]);
      expect(inside).toMatchObject({ ok: true });
      expect(readFileSync(join(out, "inside.txt"), "utf8")).toBe("ok");
      // The server allows both folders; the sandbox's read-only root refuses the writes all the same, its own folder's too.
      for (const refused of [own, outside]) {
        expect(refused).toMatchObject({ ok: false });
        expect(refused!.error).toMatch(/EROFS|read-only/i);
      }
      expect(existsSync(join(dir, "own.txt"))).toBe(false);
      expect(existsSync(join(ROOT, ".tmp", "sandbox-mcp-outside.txt"))).toBe(false);
      const [pid] = await servers.pids();
      expect(pid).toBeGreaterThan(0);
    } finally {
      await servers.close();
    }
  });
});
