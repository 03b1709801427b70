/**
 * Who may use `runtime serve` (docs/server.md#authentication): every endpoint
 * and the page want the server's token, as `Authorization: Bearer TOKEN`, or
 * as the cookie the page gets when it is opened with `?token=TOKEN` (the URL
 * printed at start), or one of the callers' tokens of `--tokens FILE`
 * (src/server/tokens-file.ts). Tokens are compared in constant time. Each token
 * has a request rate; past it, 429 with `retry-after`.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { HttpError } from "./http.js";

/** What a caller may do (docs/security.md#who-can-reach-what). */
export const SCOPES = ["run", "read", "approve", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

/** Whom a request's token names, and what it may do. */
export interface Caller {
  /** Recorded with the runs it starts (`run.started.caller`); never the token. */
  name: string;
  scopes: ReadonlySet<Scope>;
  /** Its runs that may be going on at once; past it, 429. @default no limit of its own (the server's --max-runs) */
  runsMax?: number;
  /** Requests per second it may make on average. @default the server's --rate */
  rate?: number;
}

/** A caller and the SHA-256 of its token, as the Gate below compares it. */
export interface CallerEntry extends Caller {
  digest: Buffer;
}

/** Whether `caller` may do what `scope` allows: `admin` allows everything. */
export function may(caller: Caller, scope: Scope): boolean {
  return caller.scopes.has(scope) || caller.scopes.has("admin");
}

export const sha256 = (text: string): Buffer => createHash("sha256").update(text).digest();

/** The name the one serve token's caller goes by, when no tokens file is given. */
export const SERVE_CALLER = "admin";

/** The one serve token (--token, or a fresh one) as the only caller: every scope. */
export function serveTokenCaller(token: string): CallerEntry {
  return { name: SERVE_CALLER, scopes: new Set(SCOPES), digest: sha256(token) };
}

/** The cookie the page carries its token in; one per port, since cookies do not tell ports apart. */
export function tokenCookie(port: number): string {
  return `runtime_token_${port}`;
}

const LOOPBACK = new Set(["127.0.0.1", "localhost", "::1", "[::1]"]);

/** Whether `host` (an address or a Host header's name) is this machine's loopback. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host);
}

/** A fresh token: 32 random bytes, base64url. */
export function newToken(): string {
  return randomBytes(32).toString("base64url");
}

/**
 * The token a request presents: its bearer header, else (the page only) a
 * `?token=` it was opened with, else its cookie.
 */
export function presentedToken(req: IncomingMessage, cookie: string, query?: URLSearchParams): string | undefined {
  const header = req.headers.authorization;
  if (header && /^Bearer\s+/i.test(header)) return header.replace(/^Bearer\s+/i, "").trim();
  return query?.get("token") ?? cookieValue(req.headers.cookie, cookie);
}

/** A token bucket: `rate` per second on average, `burst` at once after a quiet spell. */
interface Bucket {
  rate: number;
  burst: number;
  tokens: number;
  last: number;
}

/**
 * The one place a presented token becomes a Caller (src/server/tokens-file.ts):
 * its SHA-256 is compared with every caller's in constant time, then the
 * caller's request rate is spent. `allow` throws 401 for a missing or
 * unknown token, 429 (with `retry-after`) when the caller's rate is spent.
 */
export class Gate {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly callers: readonly CallerEntry[],
    /** Requests per second a caller may make on average, unless its entry says. */
    rate: number,
    /** Which token a refused request is told to send. */
    private readonly which = "the token runtime serve printed, --token or RUNTIME_SERVE_TOKEN",
  ) {
    for (const c of callers) {
      const r = c.rate ?? rate;
      this.buckets.set(c.name, { rate: r, burst: r * 2, tokens: r * 2, last: Date.now() });
    }
  }

  allow(presented: string | undefined): Caller {
    const given = sha256(presented ?? "");
    let found: CallerEntry | undefined;
    // Every entry is compared, equal lengths each (digests), so the time says nothing of which one matched.
    for (const c of this.callers) if (timingSafeEqual(given, c.digest)) found = c;
    // No token, or an empty one, is no one's (whatever digest a file holds).
    if (!found || !presented) {
      throw new HttpError(401, `a token is required: send Authorization: Bearer TOKEN (${this.which})`, {
        "www-authenticate": 'Bearer realm="runtime"',
      });
    }
    const bucket = this.buckets.get(found.name)!;
    const now = Date.now();
    bucket.tokens = Math.min(bucket.burst, bucket.tokens + ((now - bucket.last) / 1000) * bucket.rate);
    bucket.last = now;
    if (bucket.tokens < 1) {
      const wait = Math.ceil((1 - bucket.tokens) / bucket.rate);
      throw new HttpError(429, `too many requests: this token may make ${bucket.rate} per second`, { "retry-after": String(Math.max(1, wait)) });
    }
    bucket.tokens -= 1;
    return found;
  }
}

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const [key, ...rest] = part.trim().split("=");
    if (key === name) return rest.join("=");
  }
  return undefined;
}
