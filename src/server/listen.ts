/**
 * The one HTTP(S) server of the runtime (docs/server.md): a Hono app
 * (src/server/app.ts) served on Node's own server through
 * `@hono/node-server`'s request listener, so every handler also has Node's
 * request and response (`c.env.incoming`/`outgoing`). `runtime serve`,
 * `runtime mcp --http` and a worker's operations port all listen here.
 */
import { createServer, type Server } from "node:http";
import { createServer as createSecureServer } from "node:https";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import { RuntimeError } from "../errors.js";

export interface ListenOptions {
  /** 0 picks a free port. */
  port: number;
  /** The only address listened on. */
  host: string;
  /** Serve HTTPS with this certificate and key (PEM). */
  tls?: { cert: string | Buffer; key: string | Buffer } | undefined;
}

export interface Listening {
  /** Base URL, e.g. `http://127.0.0.1:8787`. */
  url: string;
  port: number;
  server: Server;
  /** Stop listening and close every connection. */
  close(): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: any app's environment and routes
type AnyApp = Hono<any, any, any>;

/** Serve `app` on `host:port`; a port in use or an address not ours is a USAGE error that says so. */
export async function listenApp(app: AnyApp, options: ListenOptions): Promise<Listening> {
  // The global Request and Response stay Node's own: the process also runs fetch clients (models, MCP, A2A).
  const listener = getRequestListener(app.fetch, { overrideGlobalObjects: false });
  const server = options.tls ? createSecureServer({ cert: options.tls.cert, key: options.tls.key }, listener) : createServer(listener);
  const port = await listen(server, options.port, options.host);
  const host = options.host.includes(":") ? `[${options.host}]` : options.host;
  return {
    url: `${options.tls ? "https" : "http"}://${host}:${port}`,
    port,
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      const where = `${host}:${port}`;
      if (err.code === "EADDRINUSE")
        reject(new RuntimeError("USAGE", `port ${port} is already in use on ${host} (choose another with --port, or --port 0 for a free one)`));
      else if (err.code === "EADDRNOTAVAIL") reject(new RuntimeError("USAGE", `cannot listen on ${where}: no such local address`));
      else if (err.code === "EACCES") reject(new RuntimeError("USAGE", `not allowed to listen on ${where}`));
      else reject(new RuntimeError("USAGE", `cannot listen on ${where}: ${err.message}`));
    });
    server.listen(port, host, () => resolve((server.address() as AddressInfo).port));
  });
}
