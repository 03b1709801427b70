import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { resolve as resolvePath } from "node:path";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { McpStdioServer } from "../../config/types.js";
import { callProcesses, type CallProcesses } from "../process-tree.js";
import { type Confined, confine } from "../sandbox.js";
import { RuntimeError } from "../../errors.js";

/** How much of the server's stderr is kept for error messages. */
const STDERR_KEEP_BYTES = 4096;
const STDERR_LINES = 3;
/** After stdin is closed, how long a server may take to exit before SIGTERM; then before SIGKILL. */
const EXIT_GRACE_MS = 1000;
const TERM_GRACE_MS = 500;

/**
 * The MCP stdio transport of the SDK's Transport interface (the SDK's own
 * framing: ReadBuffer, serializeMessage), over a server process started the
 * way command tools start theirs (src/tools/process-tree.ts): no shell, its
 * own process group, and a marker in its environment, so that when the
 * transport closes, or the runtime exits, nothing the server started is left
 * running. Its own group also keeps a terminal's Ctrl-C (sent to the
 * foreground group) from killing it under a run that is being interrupted.
 * It says how the process ended (`ended`), with the last lines of its stderr.
 */
export class ServerProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  private child: ChildProcessWithoutNullStreams | undefined;
  private readonly buffer = new ReadBuffer();
  /** Messages wait in the buffer until the last notification's handlers have run (`deliver`). */
  private delivering = false;
  /** What waits for the buffered messages to be handed on (the close). */
  private drained: (() => void) | undefined;
  private stderr = Buffer.alloc(0);
  private exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Why the transport stopped the server itself, when it did. */
  private stopped: string | undefined;
  private readonly processes: CallProcesses = callProcesses();
  private readonly closed: Promise<void>;
  private markClosed: () => void = () => {};

  constructor(private readonly server: McpStdioServer) {
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
  }

  async start(): Promise<void> {
    const [program, ...args] = this.server.command;
    if (program === undefined) throw new RuntimeError("CONFIG_INVALID", "the command is empty");
    // After the server's env: its configuration cannot take the marker away.
    const env = { ...getDefaultEnvironment(), ...this.server.env, ...this.processes.env };
    const executable = program.startsWith(".") ? resolvePath(this.server.cwd, program) : program;
    const argv = [executable, ...args];
    const how: Confined = this.server.sandbox ? await confine(argv, this.server.cwd, this.server.sandbox, env, "this MCP server") : { argv };
    return new Promise((resolve, reject) => {
      const child = spawn(how.argv[0]!, how.argv.slice(1), {
        shell: false,
        detached: true,
        cwd: this.server.cwd,
        env,
        stdio: ["pipe", "pipe", "pipe"],
        ...how.user,
      });
      this.child = child;
      child.once("spawn", () => {
        track(this);
        resolve();
      });
      child.once("error", (err: NodeJS.ErrnoException) => {
        const why = err.code === "ENOENT" ? `program not found: ${program}` : err.message;
        reject(new RuntimeError("TOOL_FAILED", why));
        this.onerror?.(new RuntimeError("TOOL_FAILED", why));
      });
      child.stdout.on("data", (chunk: Buffer) => {
        try {
          this.buffer.append(chunk);
        } catch (err) {
          // A message past the buffer's cap (10 MB): the connection cannot recover, as in the SDK's own transport.
          this.stopped ??= `was stopped: ${asError(err).message}`;
          this.onerror?.(asError(err));
          void this.close();
          return;
        }
        this.deliver();
      });
      child.stderr.on("data", (chunk: Buffer) => {
        this.stderr = Buffer.concat([this.stderr, chunk]);
        if (this.stderr.length > STDERR_KEEP_BYTES) this.stderr = this.stderr.subarray(this.stderr.length - STDERR_KEEP_BYTES);
      });
      child.stdin.on("error", () => undefined); // a server gone before reading: its exit says why
      child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        // Whatever the server left running dies with it.
        this.processes.kill(child.pid);
      });
      child.once("close", () => {
        live.delete(this);
        this.markClosed();
        // Messages still waiting their turn (a result sent just before the server exited) go first.
        if (this.delivering) this.drained = () => this.onclose?.();
        else this.onclose?.();
      });
    });
  }

  /**
   * Hand the buffered messages on in order. After a notification the rest
   * wait for the next turn of the event loop: the SDK runs a notification's
   * handler a microtask later but a response's at once, so the last progress
   * notification of a call, read in the same chunk as the call's response,
   * would otherwise find the call gone and be dropped.
   */
  private deliver(): void {
    if (this.delivering) return;
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.buffer.readMessage();
      } catch (err) {
        // A line that is not JSON-RPC (a server logging to stdout) is skipped and reported, not fatal.
        this.onerror?.(asError(err));
        continue;
      }
      if (message === null) {
        const then = this.drained;
        this.drained = undefined;
        then?.();
        return;
      }
      this.onmessage?.(message);
      if ("method" in message && !("id" in message)) {
        this.delivering = true;
        setImmediate(() => {
          this.delivering = false;
          this.deliver();
        });
        return;
      }
    }
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin?.writable || this.exit) return Promise.reject(new RuntimeError("TOOL_FAILED", "the server is not running"));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once("drain", resolve);
    });
  }

  /** Closes stdin (the MCP way to ask a stdio server to stop), then SIGTERM, then kills the whole tree. */
  async close(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      if (child) this.processes.kill(child.pid);
      this.buffer.clear();
      return;
    }
    child.stdin.end();
    if (!(await within(this.closed, EXIT_GRACE_MS))) {
      killGroup(child.pid, "SIGTERM");
      await within(this.closed, TERM_GRACE_MS);
    }
    this.processes.kill(child.pid);
    await within(this.closed, TERM_GRACE_MS);
    this.buffer.clear();
  }

  /** The process id, once started. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** How the process ended ("exited with code 1", or why it was stopped), with its last stderr lines; undefined while it runs. */
  ended(): string | undefined {
    if (!this.exit) return undefined;
    const how = this.stopped ?? (this.exit.signal ? `was killed by ${this.exit.signal}` : `exited with code ${String(this.exit.code)}`);
    const tail = this.stderr
      .toString("utf8")
      .split("\n")
      .map((l) => l.trim())
      .filter(Boolean)
      .slice(-STDERR_LINES)
      .join(" | ");
    return tail ? `${how} (stderr: ${tail})` : how;
  }

  /** Synchronous last resort when the runtime exits with the server still running. */
  killNow(): void {
    this.processes.kill(this.child?.pid);
  }
}

function asError(err: unknown): Error {
  return err instanceof Error ? err : new RuntimeError("TOOL_FAILED", String(err));
}

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

/** True when `promise` settled within `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Servers still running. When the runtime exits without closing them (a
 * second Ctrl-C, process.exit), one synchronous sweep ends their trees.
 */
const live = new Set<ServerProcessTransport>();
let exitHooked = false;

function track(transport: ServerProcessTransport): void {
  if (!exitHooked) {
    exitHooked = true;
    process.once("exit", () => {
      for (const t of live) t.killNow();
    });
  }
  live.add(transport);
}
