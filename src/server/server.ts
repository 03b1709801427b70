import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { ResolvedTeam } from "../config/types.js";
import { RuntimeError, describeError } from "../errors.js";
import type { EventSink } from "../events/bus.js";
import { resolveTraceDir } from "../engine/trace-dir.js";
import { redactString } from "../redact.js";
import { sqliteStore } from "../store/sqlite/store.js";
import type { Store } from "../store/store.js";
import { RunQueue } from "../queue/run-queue.js";
import { RunMetrics } from "../telemetry/metrics.js";
import { Gate, isLoopback, newToken, presentedToken, serveTokenCaller, tokenCookie, type CallerEntry } from "./auth.js";
import { BASE_HEADERS, HttpError, httpStatusOf, sendError, sendJson } from "./http.js";
import { LiveRuns } from "./live-runs.js";
import { loadPage, sendPageFile } from "./page.js";
import { clientsDropped, STALL_LIMIT_MS } from "./sse.js";
import { decideApprovals, getRun, getTrace, listRuns, resumeRunApi, startRun, streamEvents, type ApiContext, type ServerContext } from "./runs-api.js";
import { streamSession } from "./session-stream.js";
import { requireScope } from "./access.js";
import { teamInfo } from "./team-info.js";
import { isOpenAIPath, sendOpenAIError, serveOpenAI, type OpenAIEndpoint } from "./openai/index.js";
import type { A2AEndpoint } from "./a2a/endpoint.js";
import { teamSecrets } from "../engine/secrets.js";

export interface ServerOptions {
  team: ResolvedTeam;
  /** Where traces are stored and read. @default $RUNTIME_TRACE_DIR or ./.runtime */
  traceDir?: string;
  /** 0 picks a free port. @default 8787 */
  port?: number;
  /** The only address the server listens on. @default "127.0.0.1" */
  host?: string;
  /** An origin allowed to call the API from another site; CORS is off when unset. */
  corsOrigin?: string;
  /** Largest accepted request body, in bytes. @default 1048576 */
  maxBodyBytes?: number;
  /** Runs that may be in progress at once; more get a 429. @default 16 */
  maxLiveRuns?: number;
  /**
   * The token every request must present (docs/server.md#authentication).
   * Unset: a fresh one is made (see `RunningServer.token`); a server on a
   * non-loopback address refuses to start without one given.
   */
  token?: string;
  /**
   * Callers with tokens and scopes of their own (`--tokens FILE`,
   * src/server/tokens-file.ts), instead of the one `token`: each run belongs to
   * the caller that started it (docs/security.md#who-can-reach-what).
   */
  callers?: readonly CallerEntry[];
  /** Milliseconds an SSE client may read nothing before it is dropped; its run goes on (docs/server.md#slow-readers). @default 60000 */
  stallLimitMs?: number;
  /** Requests per second the token may make on average. @default 50 */
  rate?: number;
  /** Serve HTTPS with this certificate and key (PEM). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** Further sinks for each run, made per run (e.g. `() => [telemetry.sink({ team })]`, docs/telemetry.md). */
  runSinks?: () => EventSink[];
  /**
   * Where runs are kept (`createStore`). A PostgreSQL store makes this a
   * server of many (docs/scale-out.md): each run is queued for `runtime
   * worker` processes and followed through the store. The caller closes it.
   * @default the SQLite files under traceDir, runs executed in this process
   */
  store?: Store;
}

export interface RunningServer {
  /** Base URL, e.g. `http://127.0.0.1:8787`. */
  url: string;
  port: number;
  /** The token requests must present; empty when `callers` were given (each has its own). */
  token: string;
  /** The page's URL with the token, as printed at start: opening it logs the browser in. */
  pageUrl: string;
  /** Cancel the runs in progress (their traces end with run.finished), then stop listening. */
  close(): Promise<void>;
}

export const DEFAULT_PORT = 8787;
export const DEFAULT_HOST = "127.0.0.1";

/** Start the HTTP server of `runtime serve` over one loaded team. */
export async function startServer(options: ServerOptions): Promise<RunningServer> {
  const host = options.host ?? DEFAULT_HOST;
  if (options.token !== undefined && options.callers !== undefined) throw new RuntimeError("USAGE", "give either a token or a tokens file, not both");
  if (!isLoopback(host) && !options.token && !options.callers) {
    throw new RuntimeError(
      "USAGE",
      `refusing to listen on ${host} with a token anyone could have missed: give your own with --token or RUNTIME_SERVE_TOKEN (and use --tls-cert/--tls-key or a TLS proxy beyond this machine)`,
    );
  }
  const token = options.callers ? "" : (options.token ?? newToken());
  const gate = options.callers
    ? new Gate(options.callers, options.rate ?? 50, "your own, of the tokens file")
    : new Gate([serveTokenCaller(token)], options.rate ?? 50);
  const traceDir = resolveTraceDir(options.traceDir);
  const secrets = teamSecrets(options.team);
  const metrics = new RunMetrics();
  // The embedded trace store, opened here when no store is given (and closed with the server).
  const embedded = options.store ? undefined : sqliteStore(traceDir);
  await embedded?.ping();
  let queued: ApiContext["queued"];
  if (options.store?.database) {
    const queue = await RunQueue.open(options.store, [options.team.name]);
    // Listening from the start: a server that cannot hear the store's notifications does not start.
    const listening = await options.store.runs
      .watch("*", () => {})
      .catch(async (err: unknown) => {
        await queue.close();
        throw err;
      });
    const store = options.store;
    queued = { queue, listening, attachments: () => store.attachments() };
  }
  const closeStores = async () => {
    queued?.listening.close();
    await queued?.queue.close();
    await embedded?.close();
  };
  const ctx: ServerContext = {
    team: options.team,
    traceDir,
    store: (options.store ?? embedded)!.runs,
    ...(queued ? { queued } : {}),
    live: new LiveRuns(() => [metrics.sink, ...(options.runSinks?.() ?? [])], options.store),
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    maxLiveRuns: options.maxLiveRuns ?? 16,
    stallLimitMs: options.stallLimitMs ?? STALL_LIMIT_MS,
    streams: new Set(),
  };
  const page = loadPage();
  // The A2A SDK is loaded by the first A2A request: a server no A2A client talks to pays nothing for it.
  let a2aLoaded: Promise<A2AEndpoint> | undefined;
  const a2a = () => (a2aLoaded ??= import("./a2a/endpoint.js").then((m) => m.a2aEndpoint(ctx, options.tls !== undefined)));

  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (isOpenAIPath(req.url)) return sendOpenAIError(res, err, secrets);
      if (err instanceof HttpError) sendError(res, err.status, err.message, err.headers);
      else sendError(res, httpStatusOf(err), redactString(describeError(err), secrets));
    });
  };
  const server = options.tls ? createTlsServer({ cert: options.tls.cert, key: options.tls.key }, onRequest) : createServer(onRequest);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // A page on another site that rebinds its DNS name to 127.0.0.1 still sends its own Host.
    if (isLoopback(host) && !isLoopback(hostnameOf(req.headers.host))) {
      throw new HttpError(403, "this server only answers requests addressed to localhost");
    }
    const cors = corsHeaders(req, options.corsOrigin);
    for (const [k, v] of Object.entries(cors)) res.setHeader(k, v);
    const method = req.method ?? "GET";
    if (method === "OPTIONS") {
      if (!cors["access-control-allow-origin"]) throw new HttpError(405, "cross-origin requests are not enabled");
      res.writeHead(204).end();
      return;
    }
    const url = new URL(req.url ?? "/", "http://localhost");
    const route = matchRoute(method, url.pathname);
    // Probes of a load balancer or an orchestrator carry no token; they learn nothing but up or down.
    if (route.name === "health") return sendJson(res, 200, { ok: true });
    if (route.name === "ready") {
      const ready = await isReady();
      return sendJson(res, ready ? 200 : 503, { ready });
    }
    // A2A clients read the card before they have a token; it names the team's agents and the scheme (docs/protocols.md#a2a).
    if (route.name === "agentCard") return (await a2a()).card(req, res);
    const presented = presentedToken(req, tokenCookie(port), route.name === "page" ? url.searchParams : undefined);
    // Every route below is the caller's: what it may reach is checked where a run is named (src/server/access.ts).
    const rctx: ApiContext = { ...ctx, caller: gate.allow(presented) };
    if (route.name === "page" && url.searchParams.has("token")) {
      // The page's link carries the token once: it becomes a cookie and leaves the address bar.
      url.searchParams.delete("token");
      const cookie = `${tokenCookie(port)}=${presented}; HttpOnly; SameSite=Strict; Path=/${options.tls ? "; Secure" : ""}`;
      res.writeHead(303, { ...BASE_HEADERS, location: `${url.pathname}${url.search}`, "set-cookie": cookie }).end();
      return;
    }
    switch (route.name) {
      case "page":
      case "script":
      case "timeline":
        if (!page) throw new HttpError(404, "the page's files (src/server/page) are missing");
        sendPageFile(res, page[route.name === "page" ? "html" : route.name], route.name === "page" ? "text/html" : "text/javascript");
        return;
      case "events": {
        // The projection's compiled modules, and no other file of dist/ (docs/design/projection.md).
        const source = page?.events.get(route.id);
        if (source === undefined) throw new HttpError(404, `no such endpoint: ${url.pathname}`);
        sendPageFile(res, source, "text/javascript");
        return;
      }
      case "team":
        return sendJson(res, 200, teamInfo(ctx.team));
      case "startRun":
        return startRun(rctx, req, res);
      case "listRuns":
        return listRuns(rctx, res, url.searchParams);
      case "getRun":
        return getRun(rctx, res, route.id);
      case "runEvents":
        return streamEvents(rctx, req, res, route.id);
      case "trace":
        return getTrace(rctx, res, route.id);
      case "sessionEvents":
        return streamSession(rctx, req, res, route.id);
      case "resumeRun":
        return resumeRunApi(rctx, req, res, route.id);
      case "approvals":
        return decideApprovals(rctx, req, res, route.id);
      case "openai":
        return serveOpenAI(rctx, req, res, route.endpoint, route.id);
      case "a2a":
        return (await a2a()).rpc(req, res, rctx.caller);
      case "metrics": {
        // How busy the whole server is, every caller's runs counted.
        requireScope(rctx.caller, "admin");
        const counts = queued ? await queued.queue.counts() : undefined;
        const gauges = {
          runtime_runs_live: { help: "Runs this server is running or streaming now.", value: ctx.live.size },
          ...(counts
            ? {
                runtime_runs_queued: { help: "Runs waiting for a worker (the whole queue).", value: counts.queued },
                runtime_runs_running: { help: "Runs held by a worker now (the whole queue).", value: counts.running },
              }
            : {}),
        };
        res.writeHead(200, { ...BASE_HEADERS, "content-type": "text/plain; version=0.0.4; charset=utf-8" }).end(
          metrics.render(gauges, {
            runtime_sse_clients_dropped_total: { help: "Stream clients dropped for reading nothing for the stall limit.", value: clientsDropped() },
          }),
        );
        return;
      }
      default:
        // "health", "ready" and "agentCard" are answered above, before the token check.
        route.name satisfies never;
    }
  }

  async function isReady(): Promise<boolean> {
    if (queued && !queued.listening.up) return false;
    if (!options.store) return true;
    return options.store.ping().then(
      () => true,
      () => false,
    );
  }

  let port: number;
  try {
    port = await listen(server, options.port ?? DEFAULT_PORT, host);
  } catch (err) {
    await closeStores();
    throw err;
  }
  const base = `${options.tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return {
    url: base,
    port,
    token,
    pageUrl: token ? `${base}/?token=${encodeURIComponent(token)}` : `${base}/`,
    async close() {
      await ctx.live.cancelAll();
      // The cancelled runs' streams send their run.finished once it is stored (one commit later), then end;
      // a client that does not read is not waited for long.
      const ended = Promise.allSettled([...ctx.streams]);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, STREAMS_END_MS)))]);
      clearTimeout(timer);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await closeStores();
    },
  };
}

/** How long `close()` waits for the streams of cancelled runs to send their last events. */
const STREAMS_END_MS = 2_000;

type Route =
  | { name: "page" | "script" | "timeline" | "team" | "startRun" | "listRuns" | "health" | "ready" | "metrics" | "agentCard" | "a2a" }
  | { name: "events" | "getRun" | "runEvents" | "trace" | "resumeRun" | "approvals" | "sessionEvents"; id: string }
  | { name: "openai"; endpoint: OpenAIEndpoint; id: string };

/** Endpoints by method; a path known under another method answers 405. */
const ROUTES: { method: string; pattern: RegExp; route: (id: string) => Route }[] = [
  { method: "GET", pattern: /^\/(index\.html)?$/, route: () => ({ name: "page" }) },
  { method: "GET", pattern: /^\/app\.js$/, route: () => ({ name: "script" }) },
  { method: "GET", pattern: /^\/timeline\.js$/, route: () => ({ name: "timeline" }) },
  { method: "GET", pattern: /^\/events\/([\w-]{1,100})\.js$/, route: (name) => ({ name: "events", id: name }) },
  { method: "GET", pattern: /^\/v1\/team$/, route: () => ({ name: "team" }) },
  { method: "GET", pattern: /^\/healthz$/, route: () => ({ name: "health" }) },
  { method: "GET", pattern: /^\/readyz$/, route: () => ({ name: "ready" }) },
  { method: "GET", pattern: /^\/metrics$/, route: () => ({ name: "metrics" }) },
  { method: "POST", pattern: /^\/v1\/runs$/, route: () => ({ name: "startRun" }) },
  { method: "GET", pattern: /^\/v1\/runs$/, route: () => ({ name: "listRuns" }) },
  { method: "GET", pattern: /^\/v1\/runs\/([^/]{1,200})$/, route: (id) => ({ name: "getRun", id }) },
  { method: "GET", pattern: /^\/v1\/runs\/([^/]{1,200})\/events$/, route: (id) => ({ name: "runEvents", id }) },
  { method: "POST", pattern: /^\/v1\/runs\/([^/]{1,200})\/resume$/, route: (id) => ({ name: "resumeRun", id }) },
  { method: "POST", pattern: /^\/v1\/runs\/([^/]{1,200})\/approvals$/, route: (id) => ({ name: "approvals", id }) },
  { method: "GET", pattern: /^\/v1\/traces\/([^/]{1,200})$/, route: (id) => ({ name: "trace", id }) },
  { method: "GET", pattern: /^\/\.well-known\/agent-card\.json$/, route: () => ({ name: "agentCard" }) },
  { method: "POST", pattern: /^\/a2a$/, route: () => ({ name: "a2a" }) },
  { method: "GET", pattern: /^\/v1\/sessions\/([^/]{1,200})\/events$/, route: (id) => ({ name: "sessionEvents", id }) },
  { method: "GET", pattern: /^\/v1\/models$/, route: () => ({ name: "openai", endpoint: "models", id: "" }) },
  { method: "GET", pattern: /^\/v1\/models\/([^/]{1,200})$/, route: (id) => ({ name: "openai", endpoint: "model", id }) },
  { method: "POST", pattern: /^\/v1\/chat\/completions$/, route: () => ({ name: "openai", endpoint: "chat", id: "" }) },
  { method: "POST", pattern: /^\/v1\/responses$/, route: () => ({ name: "openai", endpoint: "responses", id: "" }) },
];

function matchRoute(method: string, path: string): Route {
  const allowed: string[] = [];
  for (const entry of ROUTES) {
    const m = entry.pattern.exec(path);
    if (!m) continue;
    if (entry.method === method) return entry.route(decodeId(m[1]));
    allowed.push(entry.method);
  }
  if (allowed.length) throw new HttpError(405, `${path} answers ${allowed.join(", ")}, not ${method}`, { allow: allowed.join(", ") });
  throw new HttpError(404, `no such endpoint: ${path}`);
}

function decodeId(raw: string | undefined): string {
  try {
    return decodeURIComponent(raw ?? "");
  } catch {
    throw new HttpError(400, "malformed percent-encoding in the path");
  }
}

export function hostnameOf(header: string | undefined): string {
  if (!header) return "";
  if (header.startsWith("[")) return header.slice(0, header.indexOf("]") + 1);
  return header.split(":")[0] ?? "";
}

function corsHeaders(req: IncomingMessage, allowed: string | undefined): Record<string, string> {
  if (!allowed || req.headers.origin !== allowed) return {};
  return {
    "access-control-allow-origin": allowed,
    "access-control-allow-methods": "GET, POST",
    "access-control-allow-headers": "authorization, content-type, last-event-id",
    "access-control-expose-headers": "x-task-id",
    vary: "origin",
  };
}

export function listen(server: Server, port: number, host: string): Promise<number> {
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
