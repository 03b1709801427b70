import { lookup as dnsLookup, type LookupAddress } from "node:dns";
import { request as httpRequest, type IncomingMessage, type RequestOptions } from "node:http";
import { request as httpsRequest } from "node:https";
import { BlockList, isIP } from "node:net";
import type { HttpToolConfig } from "../config/types.js";
import { declaredTool } from "./declared.js";
import type { Tool } from "./types.js";
import { RuntimeError } from "../errors.js";

/**
 * A tool backed by an HTTP endpoint: POST sends the JSON arguments as the
 * body, GET sends them as query parameters. The response (JSON, or text) is
 * the result; a non-2xx status is an error. Headers never appear in errors,
 * since they may carry credentials.
 *
 * Where it may go (docs/design/engine.md#limits): not to a loopback, private
 * or link-local address unless the tool says `allow_private: true`, and never
 * to the cloud metadata address; the check runs on the address actually
 * connected to (a DNS answer that changes between check and connect cannot
 * slip past). A redirect is followed only within the same origin, so headers
 * (credentials) never go to another one.
 */
export function httpTool(config: HttpToolConfig): Tool {
  return declaredTool(config, (args, ctx) => request(config, args, ctx.signal));
}

const MAX_REDIRECTS = 5;

async function request(config: HttpToolConfig, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => controller.abort(), config.timeout_ms);
  let url = new URL(config.url);
  const headers: Record<string, string> = { ...config.headers };
  let body: string | undefined;
  if (config.method === "GET") {
    for (const [key, value] of Object.entries(args)) url.searchParams.set(key, typeof value === "string" ? value : JSON.stringify(value));
  } else {
    headers["content-type"] ??= "application/json";
    body = JSON.stringify(args);
  }
  try {
    for (let hop = 0; ; hop++) {
      let response: { status: number; statusText: string; location?: string; text: string };
      try {
        response = await send(url, config, headers, body, controller.signal);
      } catch (err) {
        if (signal.aborted) throw new RuntimeError("ABORTED", "aborted");
        if (controller.signal.aborted) throw new RuntimeError("TOOL_TIMEOUT", `timed out after ${config.timeout_ms} ms`);
        // Refusals and the size cap are this tool's own errors, already worded.
        if (err instanceof RuntimeError) throw err;
        const cause = err instanceof Error ? `: ${err.message}` : "";
        throw new RuntimeError("TOOL_FAILED", `request to ${url.origin}${url.pathname} failed${cause}`);
      }
      if (response.status >= 300 && response.status < 400 && response.location !== undefined) {
        const next = new URL(response.location, url);
        if (next.origin !== url.origin)
          throw refused(`redirected to another origin (${next.origin}): not followed, so the tool's headers stay with ${url.origin}`);
        if (hop >= MAX_REDIRECTS) throw new RuntimeError("TOOL_FAILED", `more than ${MAX_REDIRECTS} redirects`);
        url = next;
        continue;
      }
      if (response.status < 200 || response.status >= 300) {
        throw new RuntimeError("TOOL_FAILED", `HTTP ${response.status} ${response.statusText}: ${response.text.slice(0, 300).replace(/\s+/g, " ")}`);
      }
      try {
        return JSON.parse(response.text) as unknown;
      } catch {
        return response.text;
      }
    }
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
}

/** One request, no redirect followed, the address checked where the socket connects. */
function send(
  url: URL,
  config: HttpToolConfig,
  headers: Record<string, string>,
  body: string | undefined,
  signal: AbortSignal,
): Promise<{ status: number; statusText: string; location?: string; text: string }> {
  return new Promise((resolve, reject) => {
    const literal = url.hostname.replace(/^\[|\]$/g, "");
    if (isIP(literal)) {
      const refusal = refusalOf(literal, config.allow_private);
      if (refusal) return reject(refused(refusal));
    }
    const options: RequestOptions = {
      method: config.method,
      headers: body !== undefined ? { ...headers, "content-length": String(Buffer.byteLength(body)) } : headers,
      signal,
      lookup: guardedLookup(config.allow_private),
    };
    const req = (url.protocol === "https:" ? httpsRequest : httpRequest)(url, options, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      let total = 0;
      res.on("data", (chunk: Buffer) => {
        total += chunk.byteLength;
        if (total > config.max_output_bytes) {
          res.destroy();
          reject(new RuntimeError("TOOL_FAILED", `response exceeded ${config.max_output_bytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          statusText: res.statusMessage ?? "",
          ...(typeof res.headers.location === "string" ? { location: res.headers.location } : {}),
          text: Buffer.concat(chunks).toString("utf8"),
        }),
      );
      res.on("error", reject);
    });
    req.on("error", (err) => reject(isRefusal(err) ? err : isRefusal((err as NodeJS.ErrnoException).cause) ? (err as { cause: unknown }).cause : err));
    req.end(body);
  });
}

/** Addresses never to be reached: cloud metadata endpoints. */
const METADATA = new Set(["169.254.169.254", "fd00:ec2::254"]);

const PRIVATE = new BlockList();
for (const [net, bits] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
] as const) {
  PRIVATE.addSubnet(net, bits, "ipv4");
}
for (const [net, bits] of [
  ["::1", 128],
  ["::", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["::ffff:0:0", 96],
] as const)
  PRIVATE.addSubnet(net, bits, "ipv6");

/** Why an address may not be reached, or undefined when it may. */
function refusalOf(address: string, allowPrivate: boolean): string | undefined {
  const family = isIP(address) === 6 ? "ipv6" : "ipv4";
  if (METADATA.has(address.toLowerCase())) return `refused: ${address} is the cloud metadata address`;
  if (!allowPrivate && PRIVATE.check(address, family))
    return `refused: ${address} is a loopback, private or link-local address (set allow_private: true on the tool to allow it)`;
  return undefined;
}

/** A DNS lookup that fails on an address the tool may not reach: the check sits where the socket connects. */
function guardedLookup(allowPrivate: boolean): NonNullable<RequestOptions["lookup"]> {
  return ((hostname: string, options: object, callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, "");
      const list = addresses as LookupAddress[];
      for (const a of list) {
        const refusal = refusalOf(a.address, allowPrivate);
        if (refusal) return callback(refused(`${hostname}: ${refusal}`), "");
      }
      if ((options as { all?: boolean }).all) return callback(null, list);
      const first = list[0];
      if (!first) return callback(new RuntimeError("TOOL_FAILED", `${hostname}: no address`), "");
      callback(null, first.address, first.family);
    });
  }) as NonNullable<RequestOptions["lookup"]>;
}

/** An address or a redirect the tool will not go to. */
function refused(message: string): RuntimeError {
  return new RuntimeError("TOOL_REFUSED", message);
}

function isRefusal(err: unknown): boolean {
  return err instanceof RuntimeError && err.code === "TOOL_REFUSED";
}
