/**
 * Real MCP servers for the tests: the filesystem reference server from npm
 * (stdio), a small SDK server of our own (stdio, fixtures/notes-server.mjs),
 * and a Streamable HTTP server built here with the SDK on 127.0.0.1.
 */
import { randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";
import { isAlive, sleep } from "./tools.js";

/** The filesystem reference server (a dev dependency), run with node. */
export const FS_SERVER = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", import.meta.url));
/** The everything reference server (a dev dependency): progress notifications, a tool that requires MCP tasks. */
export const EVERYTHING_SERVER = fileURLToPath(new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url));
export const NOTES_SERVER = fileURLToPath(new URL("../tools/mcp/fixtures/notes-server.mjs", import.meta.url));

/** A tag to put on a server's command line, to find its processes afterwards. */
export const newTag = (): string => `--tag=${randomUUID()}`;

/** Live processes whose command line contains `needle` (Linux /proc). */
export function processesWith(needle: string): number[] {
  const pids: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmdline = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0").join(" ");
      if (cmdline.includes(needle) && isAlive(Number(name))) pids.push(Number(name));
    } catch {
      // gone, or not ours
    }
  }
  return pids;
}

/** Pids still alive after up to `ms` (the second sweep of process-tree.ts runs 50 ms after the first). */
export async function survivors(pids: number[], ms = 500): Promise<number[]> {
  for (let waited = 0; waited < ms; waited += 25) {
    if (pids.every((pid) => !isAlive(pid))) return [];
    await sleep(25);
  }
  return pids.filter(isAlive);
}

export interface HttpMcpServer {
  url: string;
  /** The Authorization header of every request, in order. */
  authorizations: Array<string | undefined>;
  /** Tool calls received, by tool name. */
  calls: string[];
  close(): Promise<void>;
}

/**
 * A Streamable HTTP MCP server (stateless: a fresh McpServer per request) at
 * `/mcp`, with tools `add` (structured content), `whoami` (echoes the
 * Authorization header it got) and `fail` (an error result). With `token`,
 * requests without `Authorization: Bearer <token>` get 401.
 */
export async function startHttpMcpServer(options: { token?: string } = {}): Promise<HttpMcpServer> {
  const authorizations: Array<string | undefined> = [];
  const calls: string[] = [];
  const build = (req: IncomingMessage): McpServer => {
    const server = new McpServer({ name: "calc-http", version: "1.0.0" });
    server.registerTool(
      "add",
      {
        description: "Add two numbers.",
        inputSchema: { a: z.number(), b: z.number() },
        outputSchema: { sum: z.number() },
      },
      async ({ a, b }) => {
        calls.push("add");
        return { content: [{ type: "text", text: String(a + b) }], structuredContent: { sum: a + b } };
      },
    );
    server.registerTool("whoami", { description: "Say which Authorization header the request had." }, async () => {
      calls.push("whoami");
      return { content: [{ type: "text", text: `you sent ${String(req.headers.authorization)}` }] };
    });
    server.registerTool("fail", { description: "Always fails." }, async () => {
      calls.push("fail");
      return { content: [{ type: "text", text: "calc-http is out of order" }], isError: true };
    });
    return server;
  };
  const http = createServer((req, res) => {
    authorizations.push(req.headers.authorization);
    if (req.url !== "/mcp") {
      res.writeHead(404).end();
      return;
    }
    if (options.token !== undefined && req.headers.authorization !== `Bearer ${options.token}`) {
      res.writeHead(401, { "content-type": "application/json" }).end(JSON.stringify({ error: "unauthorized" }));
      return;
    }
    const server = build(req);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    void server
      .connect(transport)
      .then(() => transport.handleRequest(req, res))
      .catch(() => {
        if (!res.headersSent) res.writeHead(500).end();
      });
  });
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    authorizations,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        http.closeAllConnections();
        http.close(() => resolve());
      }),
  };
}
