import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport, StreamableHTTPError } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type CallToolResult, LoggingMessageNotificationSchema, type Tool as McpToolSpec } from "@modelcontextprotocol/sdk/types.js";
import type { McpToolConfig } from "../../config/types.js";
import { describeError, RuntimeError } from "../../errors.js";
import { ServerProcessTransport } from "./stdio-transport.js";
import { callAsTask } from "./task-call.js";

/** How the runtime introduces itself to servers. */
const CLIENT_INFO = { name: "yaml-agent-runtime", version: "1" };
/** How long an HTTP server gets to end its session when a run ends. */
const END_SESSION_MS = 2000;
/** Pages of tools/list read at most (a server that never stops paginating). */
const MAX_PAGES = 100;
/** The least severe log messages a server that logs is asked for (logging/setLevel). */
const LOG_LEVEL = "info";
/** Characters of a server's progress or log message kept in a tool.progress event. */
const MAX_MESSAGE_CHARS = 500;

/** What a server reports while a call runs: a tool.progress event's fields (src/events/types.ts). */
export interface CallProgress {
  message?: string;
  progress?: number;
  total?: number;
}
export type OnProgress = (progress: CallProgress) => void;

/**
 * One running MCP server (docs/mcp.md): the SDK's Client over a stdio
 * process (ServerProcessTransport) or Streamable HTTP. `open` starts it,
 * performs the handshake and lists its tools within `connect_timeout_ms`;
 * `call` runs one tool under a timeout and a signal. A stdio server that
 * ends by itself calls `onLost` once, and every later call fails with the
 * same message.
 */
export class McpConnection {
  private closing = false;
  private lostMessage: string | undefined;
  /** The progress listeners of the calls under way: a log message from the server goes to each. */
  private readonly calls = new Set<OnProgress>();

  private constructor(
    private readonly config: McpToolConfig,
    private readonly client: Client,
    private readonly transport: ServerProcessTransport | StreamableHTTPClientTransport,
    /** The tools the server listed, filtered by `mcp.tools`, in the server's order. */
    readonly tools: readonly McpToolSpec[],
  ) {}

  /**
   * Start the server of `config`, shake hands, list its tools. Rejects with
   * one line (`MCP server "fs" did not start: ...`) and leaves nothing
   * running when any of it fails, takes longer than `connect_timeout_ms`, or
   * `signal` fires.
   */
  static async open(config: McpToolConfig, signal: AbortSignal, onLost: (message: string) => void): Promise<McpConnection> {
    const transport =
      config.server.transport === "stdio"
        ? new ServerProcessTransport(config.server)
        : new StreamableHTTPClientTransport(new URL(config.server.url), { requestInit: { headers: config.server.headers } });
    const client = new Client(CLIENT_INFO, { capabilities: {} });
    const started = performance.now();
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(config.connect_timeout_ms)]);
    // The deadline ends the start and says so; the SDK's own request timeout must not be shorter, or under load its
    // "Request timed out" could win the race against a timer due in the same millisecond (as in the call below).
    const options = { signal: deadline, timeout: config.connect_timeout_ms + 1000 };
    let connection: McpConnection | undefined;
    client.onclose = () => {
      const ended = transport instanceof ServerProcessTransport ? (transport.ended() ?? "closed its connection") : "closed the connection";
      connection?.lost(`MCP server "${config.name}" ${ended}`, onLost);
    };
    // Log messages are not tied to a request by the protocol: each reaches every call under way (docs/mcp.md#progress-and-log-messages).
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      const { level, logger, data } = n.params;
      const text = typeof data === "string" ? data : JSON.stringify(data);
      for (const onProgress of connection?.calls ?? []) onProgress({ message: clip(`${logger ? `${logger} ` : ""}${level}: ${text}`) });
    });
    try {
      await client.connect(transport, options);
      // A server that cannot set its level still runs; it just logs as it likes.
      if (client.getServerCapabilities()?.logging) await client.setLoggingLevel(LOG_LEVEL, options).catch(() => undefined);
      const listed: McpToolSpec[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        const result = await client.listTools(cursor === undefined ? {} : { cursor }, options);
        listed.push(...result.tools);
        cursor = result.nextCursor;
        if (cursor === undefined) break;
      }
      connection = new McpConnection(config, client, transport, offered(config, listed));
      return connection;
    } catch (err) {
      // A process that had already ended when the start failed is the cause; its exit says more than "Connection closed".
      const ended = transport instanceof ServerProcessTransport ? transport.ended() : undefined;
      await client.close().catch(() => undefined);
      const why = signal.aborted
        ? "interrupted"
        : // Past the deadline, whichever timer fired first (an event loop held up past both can run the SDK's first).
          deadline.aborted || performance.now() - started >= config.connect_timeout_ms
          ? `no answer within ${config.connect_timeout_ms} ms (connect_timeout_ms)`
          : (ended ?? startError(err));
      throw new RuntimeError("TOOL_FAILED", `MCP server "${config.name}" did not start: ${why}`);
    }
  }

  /**
   * Call tool `name` of the server; its result as the server sent it. The
   * call carries a progressToken: the server's progress notifications, and
   * its log messages while the call runs, go to `onProgress`. A tool that
   * requires MCP tasks (`execution.taskSupport: "required"`) is called as a
   * task, its status messages reported the same way.
   */
  async call(spec: McpToolSpec, args: Record<string, unknown>, signal: AbortSignal, timeout_ms: number, onProgress: OnProgress): Promise<CallToolResult> {
    if (this.lostMessage) throw new RuntimeError("TOOL_FAILED", this.lostMessage);
    const report: OnProgress = (p) => onProgress(p.message === undefined ? p : { ...p, message: clip(p.message) });
    // The ToolBox's own timeout (the same figure) ends the call first and says so; this one is the SDK's, which must
    // not be shorter. Progress does not reset it (no resetTimeoutOnProgress): timeout_ms bounds the whole call, as the
    // ToolBox's timer does (docs/mcp.md#progress-and-log-messages).
    const options = {
      signal,
      timeout: timeout_ms + 1000,
      onprogress: ({ progress, total, message }: CallProgress) =>
        // Only the protocol's three fields: a server's extra ones stay out of the event.
        report({ progress, ...(total !== undefined ? { total } : {}), ...(message !== undefined ? { message } : {}) }),
    };
    this.calls.add(report);
    try {
      const params = { name: spec.name, arguments: args };
      if (spec.execution?.taskSupport === "required") return await callAsTask(this.client, params, options, report);
      return (await this.client.callTool(params, undefined, options)) as CallToolResult;
    } catch (err) {
      if (this.lostMessage) throw new RuntimeError("TOOL_FAILED", this.lostMessage);
      throw new RuntimeError("TOOL_FAILED", `MCP server "${this.config.name}": ${describeError(err).replace(/^MCP error -?\d+: /, "")}`);
    } finally {
      this.calls.delete(report);
    }
  }

  /** Stop the server: end an HTTP session, close stdin of a process and kill what is left of it. */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.transport instanceof StreamableHTTPClientTransport && this.transport.sessionId !== undefined) {
      const transport = this.transport;
      await Promise.race([transport.terminateSession().catch(() => undefined), new Promise((r) => setTimeout(r, END_SESSION_MS).unref())]);
    }
    await this.client.close().catch(() => undefined);
  }

  /** The pid of a stdio server (tests check that none survives). */
  get pid(): number | undefined {
    return this.transport instanceof ServerProcessTransport ? this.transport.pid : undefined;
  }

  private lost(message: string, onLost: (message: string) => void): void {
    if (this.closing || this.lostMessage) return;
    this.lostMessage = message;
    onLost(message);
  }
}

/** The listed tools `mcp.tools` keeps (all without it); a name the server does not list is an error. */
function offered(config: McpToolConfig, listed: McpToolSpec[]): McpToolSpec[] {
  if (config.tools === undefined) return listed;
  const byName = new Map(listed.map((t) => [t.name, t]));
  const missing = config.tools.filter((name) => !byName.has(name));
  if (missing.length > 0) {
    const names = listed.map((t) => t.name);
    throw new RuntimeError(
      "CONFIG_INVALID",
      `it lists no tool named ${missing.map((n) => `"${n}"`).join(", ")} (mcp.tools); it lists: ${names.join(", ") || "nothing"}`,
    );
  }
  return config.tools.flatMap((name) => byName.get(name) ?? []);
}

function clip(text: string): string {
  return text.length > MAX_MESSAGE_CHARS ? `${text.slice(0, MAX_MESSAGE_CHARS - 1)}…` : text;
}

/** One line for a failed start: the SDK's and fetch's errors name their cause in `cause`. */
function startError(err: unknown): string {
  const message = describeError(err)
    .replace(/^MCP error -?\d+: /, "")
    .replace(/^Streamable HTTP error: /, "");
  if (err instanceof StreamableHTTPError && err.code !== undefined) return `HTTP ${err.code}: ${message}`;
  const cause = err instanceof Error && err.cause instanceof Error ? err.cause : undefined;
  const code = (cause as NodeJS.ErrnoException | undefined)?.code;
  if (cause && !message.includes(cause.message)) return `${message} (${code ?? describeError(cause)})`;
  return message;
}
