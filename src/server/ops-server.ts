/**
 * The operations endpoints of a worker (docs/scale-out.md#operations):
 * `GET /healthz` (the process answers), `GET /readyz` (it can take runs: its
 * database answers and it hears of new runs; 503 otherwise) and
 * `GET /metrics` (Prometheus text, with the token as a bearer token, since
 * it tells how busy the deployment is and which models and tools it uses).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { RuntimeError } from "../errors.js";
import { Gate, presentedToken, serveTokenCaller } from "./auth.js";
import { BASE_HEADERS, HttpError, sendError, sendJson } from "./http.js";

export interface OpsServerOptions {
  port: number;
  host: string;
  token: string;
  ready(): Promise<boolean>;
  metrics(): Promise<string>;
}

export interface OpsServer {
  url: string;
  close(): Promise<void>;
}

export async function startOpsServer(options: OpsServerOptions): Promise<OpsServer> {
  const gate = new Gate([serveTokenCaller(options.token)], 10);
  const server = createServer((req, res) => {
    void (async () => {
      const path = new URL(req.url ?? "/", "http://localhost").pathname;
      if (req.method !== "GET") throw new HttpError(405, `${path} answers GET`, { allow: "GET" });
      if (path === "/healthz") return sendJson(res, 200, { ok: true });
      if (path === "/readyz") {
        const ready = await options.ready();
        return sendJson(res, ready ? 200 : 503, { ready });
      }
      if (path === "/metrics") {
        gate.allow(presentedToken(req, "runtime_token"));
        const text = await options.metrics();
        res.writeHead(200, { ...BASE_HEADERS, "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(text);
        return;
      }
      throw new HttpError(404, `no such endpoint: ${path} (healthz, readyz, metrics)`);
    })().catch((err: unknown) => {
      if (res.headersSent) res.destroy();
      else if (err instanceof HttpError) sendError(res, err.status, err.message, err.headers);
      else sendError(res, 500, "internal error");
    });
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", (err: NodeJS.ErrnoException) =>
      reject(
        new RuntimeError(
          "USAGE",
          err.code === "EADDRINUSE"
            ? `port ${options.port} is already in use on ${options.host}`
            : `cannot listen on ${options.host}:${options.port}: ${err.message}`,
        ),
      ),
    );
    server.listen(options.port, options.host, () => resolve((server.address() as AddressInfo).port));
  });
  return {
    url: `http://${options.host.includes(":") ? `[${options.host}]` : options.host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
