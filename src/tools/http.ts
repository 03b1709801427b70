import type { HttpToolConfig } from "../config/types.js";
import { declaredTool } from "./declared.js";
import type { Tool } from "./types.js";

/**
 * A tool backed by an HTTP endpoint: POST sends the JSON arguments as the
 * body, GET sends them as query parameters. The response (JSON, or text) is
 * the result; a non-2xx status is an error. Headers never appear in errors,
 * since they may carry credentials.
 */
export function httpTool(config: HttpToolConfig): Tool {
  return declaredTool(config, (args, ctx) => request(config, args, ctx.signal));
}

async function request(config: HttpToolConfig, args: Record<string, unknown>, signal: AbortSignal): Promise<unknown> {
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  signal.addEventListener("abort", onAbort, { once: true });
  const timer = setTimeout(() => controller.abort(), config.timeout_ms);
  try {
    const url = new URL(config.url);
    const init: RequestInit = { method: config.method, headers: { ...config.headers }, signal: controller.signal };
    if (config.method === "GET") {
      for (const [key, value] of Object.entries(args)) {
        url.searchParams.set(key, typeof value === "string" ? value : JSON.stringify(value));
      }
    } else {
      init.headers = { "content-type": "application/json", ...config.headers };
      init.body = JSON.stringify(args);
    }
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, init);
      text = await readCapped(response, config.max_output_bytes);
    } catch (err) {
      if (signal.aborted) throw new Error("aborted");
      if (controller.signal.aborted) throw new Error(`timed out after ${config.timeout_ms} ms`);
      if (err instanceof CapExceeded) throw err;
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : "";
      throw new Error(`request to ${url.origin}${url.pathname} failed${cause}`);
    }
    if (!response.ok) {
      throw new Error(`HTTP ${response.status} ${response.statusText}: ${text.slice(0, 300).replace(/\s+/g, " ")}`);
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
  }
}

async function readCapped(response: Response, maxBytes: number): Promise<string> {
  if (!response.body) return "";
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw new CapExceeded(`response exceeded ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

class CapExceeded extends Error {}
