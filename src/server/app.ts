/**
 * The one HTTP app (docs/server.md): one route table, one gate
 * (src/server/gate.ts), one error mapper. `runtime serve` mounts its API,
 * the page, the OpenAI-compatible and A2A endpoints, MCP and the probes;
 * `runtime mcp --http` MCP and the probes; a worker's operations port the
 * probes (src/server/health.ts). Handlers write to Node's response (SSE and
 * the protocol SDKs need it) and the app is told so (`RESPONSE_ALREADY_SENT`).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { HttpBindings } from "@hono/node-server";
import { RESPONSE_ALREADY_SENT } from "@hono/node-server/utils/response";
import { Hono, type Context } from "hono";
import { describeError } from "../errors.js";
import { redactString } from "../redact.js";
import type { Caller } from "./auth.js";
import { callerOf, checkEdge, type GateOptions } from "./gate.js";
import { HttpError, httpStatusOf, sendError } from "./http.js";
import { isOpenAIPath, sendOpenAIError } from "./openai/errors.js";

export type AppEnv = { Bindings: HttpBindings; Variables: { caller: Caller } };

type Method = "GET" | "POST" | "DELETE";

/** One endpoint: its method(s), its path (Hono's syntax), and its handler over Node's request and response. */
export interface Route {
  method: Method | readonly Method[];
  path: string;
  /** Answered without a token: probes and the agent card, which tell nothing of runs. */
  open?: boolean;
  /** The page: its token may come once as `?token=` (it then becomes a cookie). */
  page?: boolean;
  handle(req: IncomingMessage, res: ServerResponse, c: Context<AppEnv>): Promise<void> | void;
}

export interface AppOptions {
  routes: readonly Route[];
  gate: GateOptions;
  /** Secrets masked out of an unexpected error's message. */
  secrets: readonly string[];
}

/** The app over `routes`, behind the gate; a path known under another method answers 405, an unknown one 404. */
export function createApp(options: AppOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // The routes alone, to tell a 405 from a 404.
  const table = new Hono<AppEnv>();
  const fail = (err: unknown, c: Context<AppEnv>) => {
    sendFailure(c.env.outgoing, c.req.path, err, options.secrets);
    return RESPONSE_ALREADY_SENT;
  };
  app.onError(fail);
  app.use("*", async (c, next) => {
    if (checkEdge(options.gate, c.env.incoming, c.env.outgoing)) return RESPONSE_ALREADY_SENT;
    await next();
    return undefined;
  });
  for (const route of options.routes) {
    const methods = typeof route.method === "string" ? [route.method] : [...route.method];
    const handle = async (c: Context<AppEnv>) => {
      if (!route.open) c.set("caller", callerOf(options.gate, c.env.incoming, route.page ? new URL(c.req.url).searchParams : undefined));
      await route.handle(c.env.incoming, c.env.outgoing, c);
      return RESPONSE_ALREADY_SENT;
    };
    app.on(methods, route.path, handle);
    table.on(methods, route.path, handle);
  }
  app.notFound((c) => {
    const path = c.req.path;
    const allowed = (["GET", "POST", "DELETE"] as const).filter((m) => table.router.match(m, path)[0].length > 0);
    if (allowed.length) return fail(new HttpError(405, `${path} answers ${allowed.join(", ")}, not ${c.req.method}`, { allow: allowed.join(", ") }), c);
    return fail(new HttpError(404, `no such endpoint: ${path}`), c);
  });
  return app;
}

/**
 * A failed request's answer, in one place: a response already under way is
 * cut; the OpenAI-compatible paths answer in OpenAI's error shape; the rest
 * `{error}` with the status of the error's code, an unexpected error's
 * message masked of the team's secrets.
 */
function sendFailure(res: ServerResponse, path: string, err: unknown, secrets: readonly string[]): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (isOpenAIPath(path)) sendOpenAIError(res, err, secrets);
  else if (err instanceof HttpError) sendError(res, err.status, err.message, err.headers);
  else sendError(res, httpStatusOf(err), redactString(describeError(err), secrets));
}
