/**
 * `runtime serve` (docs/server.md): one HTTP app (src/server/app.ts) over one
 * loaded team, its API, the page, the OpenAI-compatible, A2A and MCP
 * endpoints and the probes, every run started through `launchRun`.
 * `runtime mcp --http` is the same server with MCP and the probes alone.
 */
import { readFileSync } from "node:fs";
import { teamSecrets } from "../engine/secrets.js";
import { RuntimeError } from "../errors.js";
import { createApp, type Route } from "./app.js";
import type { A2AEndpoint } from "./a2a/endpoint.js";
import { Gate, isLoopback, newToken, serveTokenCaller, tokenCookie, type CallerEntry } from "./auth.js";
import { AuthFailures, type GateOptions } from "./gate.js";
import { healthRoutes } from "./health.js";
import { sendJson } from "./http.js";
import { listenApp, type Listening } from "./listen.js";
import type { McpEndpoint, McpSessionLimits } from "./mcp-http.js";
import { openAIRoutes } from "./openai/index.js";
import { loadPage, pageRoutes } from "./page.js";
import { openRunContext, type RunContext, type RunContextOptions } from "./run-context.js";
import { decideApprovals, getRun, getTrace, listRuns, resumeRunApi, startRun, streamEvents, type ApiContext, type ServerContext } from "./runs-api.js";
import { streamSession } from "./session-stream.js";
import { teamInfo } from "./team-info.js";

/** The options of `startServer`: where runs go and their limits (`RunContextOptions`), and how the server listens. */
export interface ServerOptions extends RunContextOptions {
  /** 0 picks a free port. @default 8787 */
  port?: number;
  /** The only address the server listens on. @default "127.0.0.1" */
  host?: string;
  /** An origin allowed to call the API from another site; CORS is off when unset. */
  corsOrigin?: string;
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
  /** Requests per second the token may make on average. @default 50 */
  rate?: number;
  /** Wrong tokens one address may present in a window before it is refused (docs/security.md#the-gate). @default 20 in 60 s */
  authFailures?: { max: number; windowMs: number };
  /** Serve HTTPS with this certificate and key (PEM). */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** MCP at `/mcp`: only this agent as a tool, and the sessions' limits (docs/mcp.md). */
  mcp?: { agent?: string; sessions?: McpSessionLimits };
  /** Mount MCP and the probes alone (`runtime mcp --http`). @default everything */
  only?: "mcp";
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
  const { token, tokens } = tokensOf(options, host);
  const run = await openRunContext(options);
  let listening: Listening | undefined;
  const gate: GateOptions = {
    host,
    corsOrigin: options.corsOrigin,
    tokens,
    failures: new AuthFailures(options.authFailures?.max, options.authFailures?.windowMs),
    cookie: () => tokenCookie(listening?.port ?? 0),
  };
  const mcp = lazyMcp(run.ctx, options);
  const routes = [
    ...healthRoutes({ ready: run.ready, metrics: run.renderMetrics }),
    mcp.route,
    ...(options.only === "mcp" ? [] : serveRoutes(run.ctx, options, () => listening?.url ?? "", gate.cookie)),
  ];
  const app = createApp({ routes, gate, secrets: teamSecrets(options.team) });
  try {
    listening = await listenApp(app, { port: options.port ?? DEFAULT_PORT, host, tls: options.tls });
  } catch (err) {
    await run.close();
    throw err;
  }
  const up = listening;
  return {
    url: up.url,
    port: up.port,
    token,
    pageUrl: token ? `${up.url}/?token=${encodeURIComponent(token)}` : `${up.url}/`,
    close: () => closeServer(run, mcp.close, up),
  };
}

/** The one token (given, or a fresh one) or the callers of a tokens file; a server beyond loopback needs one of one's own. */
function tokensOf(options: ServerOptions, host: string): { token: string; tokens: Gate } {
  if (options.token !== undefined && options.callers !== undefined) throw new RuntimeError("USAGE", "give either a token or a tokens file, not both");
  if (!isLoopback(host) && !options.token && !options.callers) {
    throw new RuntimeError(
      "USAGE",
      `refusing to listen on ${host} with a token anyone could have missed: give your own with --token or RUNTIME_SERVE_TOKEN (and use --tls-cert/--tls-key or a TLS proxy beyond this machine)`,
    );
  }
  const rate = options.rate ?? 50;
  if (options.callers) return { token: "", tokens: new Gate(options.callers, rate, "your own, of the tokens file") };
  const token = options.token ?? newToken();
  return { token, tokens: new Gate([serveTokenCaller(token)], rate) };
}

/**
 * MCP at `/mcp`: the SDK is loaded by the first MCP request, so a server no
 * MCP client talks to pays nothing for it.
 */
function lazyMcp(ctx: ServerContext, options: ServerOptions): { route: Route; close(): Promise<void> } {
  let loaded: Promise<McpEndpoint> | undefined;
  const load = async (): Promise<McpEndpoint> => {
    const [{ teamMcpServer }, { mcpEndpoint }] = await Promise.all([import("./mcp-server.js"), import("./mcp-http.js")]);
    const servers = teamMcpServer(ctx, { ...(options.mcp?.agent !== undefined ? { agent: options.mcp.agent } : {}), version: packageVersion() });
    return mcpEndpoint(servers, ctx.maxBodyBytes, options.mcp?.sessions);
  };
  return {
    route: { method: ["GET", "POST", "DELETE"], path: "/mcp", handle: async (req, res, c) => (await (loaded ??= load())).handle(req, res, c.get("caller")) },
    close: async () => (loaded ? (await loaded).close() : undefined),
  };
}

/** The routes of `runtime serve` besides MCP and the probes: its API, the page, OpenAI-compatible and A2A. */
function serveRoutes(ctx: ServerContext, options: ServerOptions, base: () => string, cookie: () => string): Route[] {
  const as = (c: Parameters<Route["handle"]>[2]): ApiContext => ({ ...ctx, caller: c.get("caller") });
  // The A2A SDK is loaded by the first A2A request, as the MCP SDK is.
  let a2aLoaded: Promise<A2AEndpoint> | undefined;
  const a2a = () => (a2aLoaded ??= import("./a2a/endpoint.js").then((m) => m.a2aEndpoint(ctx, base)));
  const id = ":id{[^/]{1,200}}";
  const idOf = (c: Parameters<Route["handle"]>[2]) => c.req.param("id") ?? "";
  return [
    ...pageRoutes(loadPage(), cookie, options.tls !== undefined),
    { method: "GET", path: "/v1/team", handle: (_req, res) => sendJson(res, 200, teamInfo(ctx.team)) },
    { method: "POST", path: "/v1/runs", handle: (req, res, c) => startRun(as(c), req, res) },
    { method: "GET", path: "/v1/runs", handle: (_req, res, c) => listRuns(as(c), res, new URL(c.req.url).searchParams) },
    { method: "GET", path: `/v1/runs/${id}`, handle: (_req, res, c) => getRun(as(c), res, idOf(c)) },
    { method: "GET", path: `/v1/runs/${id}/events`, handle: (req, res, c) => streamEvents(as(c), req, res, idOf(c)) },
    { method: "POST", path: `/v1/runs/${id}/resume`, handle: (req, res, c) => resumeRunApi(as(c), req, res, idOf(c)) },
    { method: "POST", path: `/v1/runs/${id}/approvals`, handle: (req, res, c) => decideApprovals(as(c), req, res, idOf(c)) },
    { method: "GET", path: `/v1/traces/${id}`, handle: (_req, res, c) => getTrace(as(c), res, idOf(c)) },
    { method: "GET", path: `/v1/sessions/${id}/events`, handle: (req, res, c) => streamSession(as(c), req, res, idOf(c)) },
    ...openAIRoutes(as),
    // A2A clients read the card before they have a token; it names the team's agents and the scheme (docs/protocols.md#a2a).
    { method: "GET", path: "/.well-known/agent-card.json", open: true, handle: async (req, res) => (await a2a()).card(req, res) },
    { method: "POST", path: "/a2a", handle: async (req, res, c) => (await a2a()).rpc(req, res, c.get("caller")) },
  ];
}

/** How long `close()` waits for the streams of cancelled runs to send their last events. */
const STREAMS_END_MS = 2_000;

async function closeServer(run: RunContext, closeMcp: () => Promise<void>, listening: Listening): Promise<void> {
  await run.ctx.live.cancelAll();
  // The cancelled runs' streams send their run.finished once it is stored (one commit later), then end;
  // a client that does not read is not waited for long.
  const ended = Promise.allSettled([...run.ctx.streams]);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, STREAMS_END_MS)))]);
  clearTimeout(timer);
  await closeMcp();
  await listening.close();
  await run.close();
}

let version: string | undefined;

/** The runtime's version, as its MCP server introduces itself. */
function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;
  return version;
}
