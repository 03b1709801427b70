/**
 * Who may use `runtime serve` (docs/server.md#authentication): every endpoint
 * and the page want the server's token, as `Authorization: Bearer TOKEN`, or
 * as the cookie the page gets when it is opened with `?token=TOKEN` (the URL
 * printed at start). Tokens are compared in constant time. Each token has a
 * request rate; past it, 429 with `retry-after`.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { HttpError } from "./http.js";

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

const digest = (text: string) => createHash("sha256").update(text).digest();

/**
 * The token a request presents: its bearer header, else (the page only) a
 * `?token=` it was opened with, else its cookie.
 */
export function presentedToken(req: IncomingMessage, cookie: string, query?: URLSearchParams): string | undefined {
  const header = req.headers.authorization;
  if (header && /^Bearer\s+/i.test(header)) return header.replace(/^Bearer\s+/i, "").trim();
  return query?.get("token") ?? cookieValue(req.headers.cookie, cookie);
}

/**
 * Checks tokens and their request rates. `allow` throws 401 for a missing or
 * wrong token, 429 (with `retry-after`) when the token's rate is spent.
 */
export class Gate {
  private readonly expected: Buffer;
  private tokens: number;
  private last = Date.now();

  constructor(
    token: string,
    /** Requests per second a token may make, on average. */
    private readonly rate: number,
    /** How many it may make at once after a quiet spell. */
    private readonly burst = rate * 2,
  ) {
    this.expected = digest(token);
    this.tokens = this.burst;
  }

  allow(presented: string | undefined): void {
    // Hashing first gives equal lengths, so timingSafeEqual compares in constant time.
    if (presented === undefined || !timingSafeEqual(digest(presented), this.expected)) {
      throw new HttpError(401, "a token is required: send Authorization: Bearer TOKEN (the token runtime serve printed, --token or RUNTIME_SERVE_TOKEN)", {
        "www-authenticate": 'Bearer realm="runtime"',
      });
    }
    const now = Date.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.rate);
    this.last = now;
    if (this.tokens < 1) {
      const wait = Math.ceil((1 - this.tokens) / this.rate);
      throw new HttpError(429, `too many requests: this token may make ${this.rate} per second`, { "retry-after": String(Math.max(1, wait)) });
    }
    this.tokens -= 1;
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
