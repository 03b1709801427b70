import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadTeam } from "../../src/config/load.js";
import type { RunEvent } from "../../src/events/types.js";
import { startServer, type RunningServer } from "../../src/server/server.js";
import { tempDir } from "./team.js";
import { ROOT, spawnRuntime, type Spawned } from "./cli.js";

export const CIRCLE_QUESTION = "What are the area and circumference of a circle with radius 5 meters?";

/** One parsed Server-Sent Event. */
export interface Sse {
  id: string | undefined;
  event: string | undefined;
  data: RunEvent;
}

/** Parse a whole text/event-stream body. */
export function parseSse(text: string): Sse[] {
  return text
    .split("\n\n")
    .filter((block) => block.split("\n").some((l) => l.startsWith("data:")))
    .map((block) => {
      const fields: Record<string, string[]> = {};
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":");
        if (colon <= 0) continue;
        (fields[line.slice(0, colon)] ??= []).push(line.slice(colon + 1).replace(/^ /, ""));
      }
      return { id: fields.id?.[0], event: fields.event?.[0], data: JSON.parse((fields.data ?? []).join("\n")) as RunEvent };
    });
}

/** `fetch` with the server's token as a bearer header. */
export function authedFetch(token: string): typeof fetch {
  return (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set("authorization", `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
}

/** POST a run (with the server's token) and read its whole event stream. */
export async function postRun(url: string, body: unknown, token: string): Promise<{ response: Response; events: Sse[] }> {
  const response = await authedFetch(token)(`${url}/v1/runs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { response, events: parseSse(await response.text()) };
}

/**
 * Read an event stream chunk by chunk, calling `onEvent` for each event as it
 * arrives; stop early when it returns true. Resolves with the events read.
 */
export async function readSse(response: Response, onEvent: (e: Sse) => boolean | void = () => false): Promise<Sse[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const seen: Sse[] = [];
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return seen;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const parsed = parseSse(buffer.slice(0, end + 2));
      buffer = buffer.slice(end + 2);
      for (const e of parsed) {
        seen.push(e);
        if (onEvent(e) === true) {
          await reader.cancel();
          return seen;
        }
      }
    }
  }
}

/** Start the server in-process on a free port over a team file; `fetch` sends its token. */
export async function serveTeam(file: string, traceDir = tempDir("serve-trace-")): Promise<RunningServer & { traceDir: string; fetch: typeof fetch }> {
  const team = await loadTeam(file.startsWith("/") ? file : `${ROOT}${file}`);
  const server = await startServer({ team, traceDir, port: 0 });
  return { ...server, traceDir, fetch: authedFetch(server.token) };
}

/**
 * Spawn `runtime serve ARGS --port 0 --trace-dir DIR` (the built CLI) and resolve once it listens:
 * its URL and the token its page link carries ("" when it has none to print: `--tokens`, or a
 * token of the operator's own); `fetch` sends that token.
 */
export async function spawnServe(
  args: string[],
  options: { traceDir?: string; env?: Record<string, string | undefined> } = {},
): Promise<Spawned & { token: string; fetch: typeof fetch }> {
  const served = await spawnRuntime(
    ["serve", ...args, "--port", "0", "--trace-dir", options.traceDir ?? tempDir()],
    options.env ?? {},
    /open (https?:\/\/[^/\s]+)\/\?token=([^;\s]+)/,
  );
  const token = served.ready[2]?.startsWith("<") ? "" : decodeURIComponent(served.ready[2] ?? "");
  return { ...served, token, fetch: authedFetch(token) };
}

/** Poll `check` until it returns a value, or fail after `ms`. */
export async function eventually<T>(check: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** teams/circle-react.yaml, whose solver may use the calculator only with approval. */
export function approvalTeam(): string {
  const dir = tempDir("approval-team-");
  cpSync(join(ROOT, "teams"), dir, { recursive: true });
  const file = join(dir, "circle-react.yaml");
  const text = readFileSync(file, "utf8").replace(
    "    tools: [calculator, terminate]\n",
    "    tools: [calculator, terminate]\n    approval: { calculator: required }\n",
  );
  if (!text.includes("approval:")) throw new Error("circle-react.yaml changed: cannot add approval");
  writeFileSync(file, text);
  return file;
}
