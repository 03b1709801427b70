/**
 * MCP over Streamable HTTP at `/mcp` of the HTTP app (docs/mcp.md#over-streamable-http),
 * behind the gate's tokens: one SDK server and transport per session, as
 * over stdio one per connection. A request without `mcp-session-id` (the
 * initialize) opens one, the rest name theirs; a session is its opener's.
 * Sessions, not stateless requests, because a client's cancellation comes
 * as a later request that must reach the server running the call.
 *
 * Sessions are capped per caller and in all (docs/security.md#the-gate):
 * a caller at its cap, or a server at its total, makes room by closing the
 * caller's own least recently used idle session (none of its calls under
 * way), else the most crowded caller's; only when none is idle is a new
 * session refused (429). One caller's idle sessions never lock another out.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { requireScope } from "./access.js";
import type { Caller } from "./auth.js";
import { HttpError, readJsonBody } from "./http.js";
import type { TeamMcpServers } from "./mcp-server.js";

export interface McpSessionLimits {
  /** Sessions one caller may hold. @default 100 */
  perCaller?: number;
  /** Sessions in all. @default 1000 */
  total?: number;
  /** A session without a request for this long is closed (a client that never sent DELETE). @default 1 hour */
  idleMs?: number;
}

interface Session {
  transport: StreamableHTTPServerTransport;
  lastSeen: number;
  /** POSTs being answered (a tool call under way); the client's standing GET stream is not one. */
  busy: number;
  /** The caller who opened it: only its requests reach it. */
  caller: string;
}

/** The `/mcp` endpoint: `handle` answers one request of a caller the gate let in. */
export interface McpEndpoint {
  handle(req: IncomingMessage, res: ServerResponse, caller: Caller): Promise<void>;
  /** Close every session: the calls in flight are cancelled, their runs end interrupted, traces kept. */
  close(): Promise<void>;
}

export function mcpEndpoint(servers: TeamMcpServers, maxBodyBytes: number, limits: McpSessionLimits = {}): McpEndpoint {
  const perCaller = limits.perCaller ?? 100;
  const total = limits.total ?? 1000;
  const idleMs = limits.idleMs ?? 3_600_000;
  const sessions = new Map<string, Session>();

  const open = async (caller: Caller): Promise<StreamableHTTPServerTransport> => {
    makeRoom(sessions, caller.name, perCaller, total);
    const server = servers.create(caller);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      onsessioninitialized: (id) => void sessions.set(id, { transport, lastSeen: Date.now(), busy: 0, caller: caller.name }),
    });
    await server.connect(transport);
    // Closing the transport (DELETE, idle, eviction, shutdown) closes the server, which aborts its calls, so their runs.
    server.server.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    return transport;
  };

  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const session of sessions.values()) if (session.busy === 0 && now - session.lastSeen > idleMs) void session.transport.close();
    },
    Math.min(idleMs, 60_000),
  ).unref();

  return {
    async handle(req, res, caller) {
      // Every tool of this server starts a run: a session is for callers with the `run` scope.
      requireScope(caller, "run");
      // Read by the server's one body reader (its limit, U+FFFD for lone surrogates), then handed to the SDK.
      const body = req.method === "POST" ? await readJsonBody(req, maxBodyBytes) : undefined;
      const id = req.headers["mcp-session-id"];
      let transport: StreamableHTTPServerTransport;
      let session: Session | undefined;
      if (typeof id === "string") {
        session = sessions.get(id);
        // The protocol's answer to an unknown or ended session: 404, and the client starts a new one. Another caller's is unknown to this one.
        if (!session || session.caller !== caller.name) throw new HttpError(404, "no such MCP session (it ended): start a new one");
        session.lastSeen = Date.now();
        transport = session.transport;
      } else {
        if (req.method !== "POST") throw new HttpError(400, "start a session with an initialize request (POST)");
        transport = await open(caller);
        // A first request that was not an initialize leaves no session: nothing of it stays.
        res.once("close", () => {
          if (transport.sessionId === undefined) void transport.close();
        });
      }
      if (session && req.method === "POST") {
        const counted = session;
        counted.busy++;
        res.once("close", () => {
          counted.busy--;
          counted.lastSeen = Date.now();
        });
      }
      await transport.handleRequest(req, res, body);
    },
    async close() {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((s) => s.transport.close()));
    },
  };
}

/**
 * Before `caller` opens a session: under its cap and the total, nothing to
 * do; else close the least recently used idle session of the caller itself
 * (at its cap) or of the caller holding the most (at the total); 429 when
 * every one of those is busy.
 */
function makeRoom(sessions: Map<string, Session>, caller: string, perCaller: number, total: number): void {
  const held = (name: string) => [...sessions.values()].filter((s) => s.caller === name);
  let from: Session[] | undefined;
  if (held(caller).length >= perCaller) from = held(caller);
  else if (sessions.size >= total) {
    const counts = new Map<string, number>();
    for (const s of sessions.values()) counts.set(s.caller, (counts.get(s.caller) ?? 0) + 1);
    const crowded = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
    from = crowded === undefined ? [] : held(crowded);
  }
  if (from === undefined) return;
  const idle = from.filter((s) => s.busy === 0).sort((a, b) => a.lastSeen - b.lastSeen)[0];
  if (!idle) throw new HttpError(429, "too many MCP sessions under way: end one with DELETE, or retry later", { "retry-after": "1" });
  // Gone from the count at once; the transport's close follows.
  if (idle.transport.sessionId !== undefined) sessions.delete(idle.transport.sessionId);
  void idle.transport.close();
}
