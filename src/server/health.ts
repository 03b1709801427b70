/**
 * The probes and metrics of every server of the runtime (docs/server.md#health-and-metrics,
 * docs/scale-out.md#operations): `GET /healthz` (the process answers),
 * `GET /readyz` (it can do its work: 503 otherwise), both without a token,
 * as a load balancer or an orchestrator asks; and `GET /metrics`
 * (Prometheus text), for the admin's token, since it tells how busy the
 * deployment is and which models and tools it uses. `runtime serve` and a
 * worker's operations port mount the same routes.
 */
import { createApp, type Route } from "./app.js";
import { requireScope } from "./access.js";
import { Gate, serveTokenCaller } from "./auth.js";
import { AuthFailures } from "./gate.js";
import { BASE_HEADERS, sendJson } from "./http.js";
import { listenApp, type Listening } from "./listen.js";

export interface Health {
  ready(): Promise<boolean>;
  /** The metrics in Prometheus' text format. */
  metrics(): Promise<string>;
}

export function healthRoutes(health: Health): Route[] {
  return [
    { method: "GET", path: "/healthz", open: true, handle: (_req, res) => sendJson(res, 200, { ok: true }) },
    {
      method: "GET",
      path: "/readyz",
      open: true,
      handle: async (_req, res) => {
        const ready = await health.ready().catch(() => false);
        sendJson(res, ready ? 200 : 503, { ready });
      },
    },
    {
      method: "GET",
      path: "/metrics",
      handle: async (_req, res, c) => {
        requireScope(c.get("caller"), "admin");
        const text = await health.metrics();
        res.writeHead(200, { ...BASE_HEADERS, "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(text);
      },
    },
  ];
}

/** A worker's operations port: the same app with the probes alone, `/metrics` behind `token`. */
export function serveHealth(health: Health, options: { port: number; host: string; token: string }): Promise<Listening> {
  const gate = { host: options.host, tokens: new Gate([serveTokenCaller(options.token)], 10), failures: new AuthFailures(), cookie: () => "runtime_token" };
  return listenApp(createApp({ routes: healthRoutes(health), gate, secrets: [] }), options);
}
