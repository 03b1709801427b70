/**
 * The one gate of the HTTP app (docs/security.md#the-gate): every request's
 * Host (against DNS rebinding), Origin and CORS preflight are checked here,
 * then each route that is not open (probes, the agent card) wants a token
 * that names a caller (src/server/auth.ts). An address that keeps
 * presenting wrong tokens is refused for a while (`AuthFailures`).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { HttpError } from "./http.js";
import { isLoopback, presentedToken, type Caller, type Gate } from "./auth.js";

export interface GateOptions {
  /** The address listened on: on loopback, only requests addressed to loopback are answered. */
  host: string;
  /** An origin allowed to call from another site (CORS); other sites' requests are refused. */
  corsOrigin?: string | undefined;
  /** Tokens to callers, with their request rates. */
  tokens: Gate;
  /** Wrong tokens per address. */
  failures: AuthFailures;
  /** The name of the page's token cookie (it depends on the port, known once listening). */
  cookie(): string;
}

/** A Host header's name and port, parsed strictly: a name or an address, an optional port, nothing else. */
export function parseHost(header: string | undefined): { hostname: string; port?: number } | undefined {
  const m = /^(?:\[([0-9A-Fa-f:.]{2,45})\]|([A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))?)(?::(\d{1,5}))?$/.exec(header ?? "");
  if (!m || (m[1] === undefined && m[2] === undefined)) return undefined;
  const port = m[3] === undefined ? undefined : Number(m[3]);
  if (port !== undefined && port > 65535) return undefined;
  const hostname = m[1] !== undefined ? `[${m[1]}]` : m[2]!.toLowerCase();
  return port === undefined ? { hostname } : { hostname, port };
}

/**
 * Host, Origin and CORS, for every request: a server on loopback answers
 * only requests addressed to loopback (a page of another site that rebinds
 * its DNS name to 127.0.0.1 still sends its own Host); a request from a page
 * of another origin than this server's and `corsOrigin` is refused, whatever
 * its token. Returns true when the request was a preflight, answered here.
 */
export function checkEdge(options: GateOptions, req: IncomingMessage, res: ServerResponse): boolean {
  const host = parseHost(req.headers.host);
  if (isLoopback(options.host) && !(host && isLoopback(host.hostname))) {
    throw new HttpError(403, "this server only answers requests addressed to localhost");
  }
  const origin = req.headers.origin;
  const allowed = options.corsOrigin !== undefined && origin === options.corsOrigin;
  if (origin !== undefined && !allowed && !sameOrigin(origin, req.headers.host)) {
    throw new HttpError(
      403,
      `requests from ${origin} are refused: only this server's own pages${options.corsOrigin ? ` and ${options.corsOrigin}` : ""} may call it`,
    );
  }
  if (allowed) {
    res.setHeader("access-control-allow-origin", origin);
    res.setHeader("access-control-allow-methods", "GET, POST, DELETE");
    res.setHeader("access-control-allow-headers", "authorization, content-type, last-event-id, mcp-session-id, mcp-protocol-version");
    res.setHeader("access-control-expose-headers", "x-task-id, mcp-session-id");
    res.setHeader("vary", "origin");
  }
  if (req.method !== "OPTIONS") return false;
  if (!allowed) throw new HttpError(405, "cross-origin requests are not enabled");
  res.writeHead(204).end();
  return true;
}

/** Whether an Origin header names the server the request was addressed to (the page's own requests). */
function sameOrigin(origin: string, host: string | undefined): boolean {
  try {
    return host !== undefined && new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}

/**
 * The caller a request's token names (401 without one, 429 past its rate),
 * counting wrong tokens by remote address: past the limit, the address is
 * answered 429 until its window ends, whatever token it presents, so a
 * guesser cannot tell a right guess from a wrong one meanwhile.
 */
export function callerOf(options: GateOptions, req: IncomingMessage, query?: URLSearchParams): Caller {
  const address = req.socket.remoteAddress ?? "";
  options.failures.check(address);
  const presented = presentedToken(req, options.cookie(), query);
  try {
    return options.tokens.allow(presented);
  } catch (err) {
    // A request with no token is not a guess: only a wrong token counts.
    if (err instanceof HttpError && err.status === 401 && presented) options.failures.failed(address);
    throw err;
  }
}

/**
 * Wrong tokens per remote address, in fixed windows (docs/security.md#the-gate):
 * `max` failures within `windowMs` of the first refuse the address (429,
 * `retry-after`) until the window ends. @default 20 in 60 s
 */
export class AuthFailures {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly max = 20,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  check(address: string): void {
    const window = this.current(address);
    if (!window || window.count < this.max) return;
    const wait = Math.ceil((window.start + this.windowMs - this.now()) / 1000);
    throw new HttpError(429, `too many wrong tokens from ${address}: retry in ${wait} s`, { "retry-after": String(Math.max(1, wait)) });
  }

  failed(address: string): void {
    const window = this.current(address);
    if (window) window.count++;
    else {
      // Memory stays bounded: the ended windows go once there are many.
      if (this.windows.size >= 10_000) for (const [a, w] of this.windows) if (this.now() - w.start >= this.windowMs) this.windows.delete(a);
      this.windows.set(address, { start: this.now(), count: 1 });
    }
  }

  private current(address: string): { start: number; count: number } | undefined {
    const window = this.windows.get(address);
    if (window && this.now() - window.start >= this.windowMs) {
      this.windows.delete(address);
      return undefined;
    }
    return window;
  }
}
