import type { McpToolConfig } from "../../config/types.js";
import type { Tool } from "../types.js";
import type { McpConnection } from "./connection.js";
import { mcpTool } from "./tool.js";
import { RuntimeError } from "../../errors.js";

/**
 * The MCP client (its SDK and zod, ~130 modules) loads with a run's first MCP
 * server: a team without one never pays for it (docs/design/engine.md#start-up).
 */
const connections = (): Promise<typeof import("./connection.js")> => import("./connection.js");

/**
 * The MCP servers of one run (docs/mcp.md): each entry's server is started
 * the first time an agent that lists the entry needs it, shared by every
 * agent of the run after that, and stopped by `close` when the run ends.
 */
export class McpServers {
  private readonly started = new Map<string, Promise<McpConnection>>();
  private readonly ready = new Map<string, Tool[]>();
  /**
   * Aborts starts still under way when the run closes its servers. Made with
   * the first start: most runs start none, and an AbortController and the
   * DOMException its abort makes cost ~40 µs a run (docs/performance.md).
   */
  private closing: AbortController | undefined;
  private closed = false;

  constructor(
    /** A server ended by itself mid-run; called once per server. */
    private readonly onLost: (message: string) => void = () => {},
  ) {}

  /**
   * The tools of entry `config`, its server started on first use. Rejects
   * with one line when it does not start; a caller's `signal` stops its own
   * wait, not a start other agents may share.
   */
  async tools(config: McpToolConfig, signal: AbortSignal): Promise<Tool[]> {
    let start = this.started.get(config.name);
    if (!start) {
      if (this.closed) throw new RuntimeError("ABORTED", `MCP server "${config.name}": the run has ended`);
      const closing = (this.closing ??= new AbortController()).signal;
      start = connections()
        .then(({ McpConnection }) => McpConnection.open(config, closing, this.onLost))
        .then((connection) => {
          this.ready.set(
            config.name,
            connection.tools.map((spec) => mcpTool(config, spec, connection)),
          );
          if (closing.aborted) void connection.close();
          return connection;
        });
      this.started.set(config.name, start);
      // A failed start is reported to whoever waits; it must not also be an unhandled rejection.
      start.catch(() => undefined);
    }
    await untilAborted(start, signal, `MCP server "${config.name}": interrupted while starting`);
    return this.listed(config.name) ?? [];
  }

  /** The tools of an entry whose server has started, else undefined. */
  listed(name: string): Tool[] | undefined {
    return this.ready.get(name);
  }

  /** The pids of the stdio servers started so far (for tests). */
  async pids(): Promise<number[]> {
    const connections = await Promise.allSettled([...this.started.values()]);
    return connections.flatMap((c) => (c.status === "fulfilled" && c.value.pid !== undefined ? [c.value.pid] : []));
  }

  /** Stop every server (those still starting too) and wait until they have stopped. */
  async close(): Promise<void> {
    this.closed = true;
    this.closing?.abort();
    const connections = await Promise.allSettled([...this.started.values()]);
    await Promise.all(connections.map((c) => (c.status === "fulfilled" ? c.value.close() : undefined)));
  }
}

/** `promise`, or a rejection with `message` as soon as `signal` fires. */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal, message: string): Promise<T> {
  if (signal.aborted) return Promise.reject(new RuntimeError("ABORTED", message));
  return new Promise((resolve, reject) => {
    const onAbort = (): void => reject(new RuntimeError("ABORTED", message));
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err instanceof Error ? err : new RuntimeError("TOOL_FAILED", String(err)));
      },
    );
  });
}
