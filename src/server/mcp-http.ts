/**
 * `runtime mcp TEAM --http` (docs/mcp.md#over-streamable-http): the team's
 * MCP server over Streamable HTTP at `/mcp`, behind the serve token
 * (`Authorization: Bearer TOKEN`, src/server/auth.ts). One SDK server and
 * transport per session, as over stdio one per connection (the runs are
 * shared, src/server/mcp-server.ts): a request without `mcp-session-id`
 * (the initialize) opens one, the rest name theirs. Sessions, not stateless
 * requests, because a client's cancellation comes as a later request that
 * must reach the server running the call; the SDK's client does not close
 * the call's stream when it cancels.
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { requireScope } from "./access.js";
import { Gate, isLoopback, presentedToken, serveTokenCaller, tokenCookie, type CallerEntry } from "./auth.js";
import { HttpError, sendError } from "./http.js";
import type { TeamMcpServers } from "./mcp-server.js";
import { hostnameOf, listen } from "./server.js";

export interface McpHttpOptions {
  servers: TeamMcpServers;
  port: number;
  host: string;
  /** The one token every request presents (a caller with every scope), unless `callers` are given. */
  token?: string;
  /** Callers with tokens of their own (`--tokens FILE`, src/server/tokens-file.ts): a session is its opener's, and needs the `run` scope. */
  callers?: readonly CallerEntry[];
  /** Requests per second the token may make, on average. @default 50, as `runtime serve` */
  rate?: number;
  /** Sessions at once; a new one past it gets 429. @default 100 */
  maxSessions?: number;
  /** A session without a request for this long is closed (a client that never sent DELETE). @default 1 hour */
  idleMs?: number;
}

export interface McpHttpServer {
  /** The endpoint, e.g. `http://127.0.0.1:8788/mcp`. */
  url: string;
  /** Close every session (the calls in flight are cancelled: their runs end interrupted, traces kept), then stop listening. */
  close(): Promise<void>;
}

export const MCP_PATH = "/mcp";

interface Session {
  transport: StreamableHTTPServerTransport;
  lastSeen: number;
  /** The caller who opened it: only its requests reach it. */
  caller: string;
}

export async function startMcpHttp(options: McpHttpOptions): Promise<McpHttpServer> {
  const gate = options.callers
    ? new Gate(options.callers, options.rate ?? 50, "your own, of the tokens file")
    : new Gate([serveTokenCaller(options.token ?? "")], options.rate ?? 50);
  const maxSessions = options.maxSessions ?? 100;
  const idleMs = options.idleMs ?? 3_600_000;
  const sessions = new Map<string, Session>();
  let port = options.port;

  const open = async (caller: string): Promise<StreamableHTTPServerTransport> => {
    if (sessions.size >= maxSessions) {
      throw new HttpError(429, `too many MCP sessions (${maxSessions} at most): end one with DELETE, or retry later`, { "retry-after": "1" });
    }
    const server = options.servers.create(caller);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => void sessions.set(id, { transport, lastSeen: Date.now(), caller }),
    });
    await server.connect(transport);
    // Closing the transport (DELETE, idle, shutdown) closes the server, which aborts its calls, so their runs.
    server.server.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    return transport;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // A page on another site that rebinds its DNS name to 127.0.0.1 still sends its own Host (as in server.ts).
    if (isLoopback(options.host) && !isLoopback(hostnameOf(req.headers.host))) {
      throw new HttpError(403, "this server only answers requests addressed to localhost");
    }
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path !== MCP_PATH) throw new HttpError(404, `no such endpoint: ${path} (MCP is served at ${MCP_PATH})`);
    // Every tool of this server starts a run: a session is for callers with the `run` scope.
    const caller = gate.allow(presentedToken(req, tokenCookie(port)));
    requireScope(caller, "run");
    const id = req.headers["mcp-session-id"];
    let transport: StreamableHTTPServerTransport;
    if (typeof id === "string") {
      const session = sessions.get(id);
      // The protocol's answer to an unknown or ended session: 404, and the client starts a new one. Another caller's is unknown to this one.
      if (!session || session.caller !== caller.name) throw new HttpError(404, "no such MCP session (it ended): start a new one");
      session.lastSeen = Date.now();
      transport = session.transport;
    } else {
      if (req.method !== "POST") throw new HttpError(400, "start a session with an initialize request (POST)");
      transport = await open(caller.name);
      // A first request that was not an initialize leaves no session: nothing of it stays.
      res.once("close", () => {
        if (transport.sessionId === undefined) void transport.close();
      });
    }
    await transport.handleRequest(req, res);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else if (err instanceof HttpError) sendError(res, err.status, err.message, err.headers);
      else sendError(res, 500, "internal error");
    });
  });
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const session of sessions.values()) if (now - session.lastSeen > idleMs) void session.transport.close();
    },
    Math.min(idleMs, 60_000),
  ).unref();
  port = await listen(http, options.port, options.host).catch((err: unknown) => {
    clearInterval(sweep);
    throw err;
  });
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}${MCP_PATH}`,
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((s) => s.transport.close()));
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      });
    },
  };
}
