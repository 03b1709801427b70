/**
 * `runtime mcp TEAM --http` (docs/mcp.md#over-streamable-http): the team's
 * MCP server over Streamable HTTP at `/mcp`, behind the serve token
 * (`Authorization: Bearer TOKEN`, src/server/auth.ts). Stateless, as the
 * SDK's stateless example: each POST gets a fresh server and transport (the
 * runs they start are shared, src/server/mcp-server.ts), so there is no
 * session to lose; a call's progress notifications go on its own response
 * stream. GET (a stream for server-initiated messages) and DELETE (ending a
 * session) answer 405, which the protocol allows and clients expect.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { Gate, isLoopback, presentedToken, tokenCookie } from "./auth.js";
import { HttpError, sendError } from "./http.js";
import type { TeamMcpServers } from "./mcp-server.js";
import { hostnameOf, listen } from "./server.js";

export interface McpHttpOptions {
  servers: TeamMcpServers;
  port: number;
  host: string;
  token: string;
  /** Requests per second the token may make, on average. @default 50, as `runtime serve` */
  rate?: number;
}

export interface McpHttpServer {
  /** The endpoint, e.g. `http://127.0.0.1:8788/mcp`. */
  url: string;
  /** Stop listening; the calls in flight are cancelled (their runs end interrupted, traces kept). */
  close(): Promise<void>;
}

export const MCP_PATH = "/mcp";

export async function startMcpHttp(options: McpHttpOptions): Promise<McpHttpServer> {
  const gate = new Gate(options.token, options.rate ?? 50);
  let port = options.port;

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // A page on another site that rebinds its DNS name to 127.0.0.1 still sends its own Host (as in server.ts).
    if (isLoopback(options.host) && !isLoopback(hostnameOf(req.headers.host))) {
      throw new HttpError(403, "this server only answers requests addressed to localhost");
    }
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    if (path !== MCP_PATH) throw new HttpError(404, `no such endpoint: ${path} (MCP is served at ${MCP_PATH})`);
    gate.allow(presentedToken(req, tokenCookie(port)));
    if (req.method !== "POST") throw new HttpError(405, `${MCP_PATH} answers POST (a stateless server: no session stream)`, { allow: "POST" });
    const server = options.servers.create();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    // The response ending (or the client going away) closes both; closing aborts the calls in flight, so their runs.
    res.once("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };

  const http = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else if (err instanceof HttpError) sendError(res, err.status, err.message, err.headers);
      else sendError(res, 500, "internal error");
    });
  });
  port = await listen(http, options.port, options.host);
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `http://${host}:${port}${MCP_PATH}`,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
