/**
 * Beyond one machine as an operator runs it (docs/scale-out.md): spawned
 * `runtime serve --store` and `runtime worker` processes on a real
 * PostgreSQL, and a team whose tool leaves a line in a file at every call
 * (a side effect that must never happen twice). Shared by the tests of
 * test/store/scale-out.test.ts and test/queue/.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import pg from "pg";
import { afterEach, expect } from "vitest";
import { BIN, ROOT } from "./cli.js";
import type { ChatBody, OpenAIServer, Reply } from "./openai-server.js";
import { authedFetch, parseSse, type Sse } from "./runtime-server.js";
import { reactReply, writeTeam } from "./team.js";

export interface Proc {
  child: ChildProcess;
  /** stderr so far. */
  log(): string;
  /** stdout so far. */
  out(): string;
  exited: Promise<number | null>;
}

/** The processes started; the caller kills what is left after each test (`killAll`). */
const children: ChildProcess[] = [];

export function start(args: string[]): Proc {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let err = "";
  let out = "";
  child.stderr?.setEncoding("utf8").on("data", (d: string) => (err += d));
  child.stdout?.setEncoding("utf8").on("data", (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, log: () => err, out: () => out, exited };
}

/** SIGKILL every process still running. */
export function killAll(): void {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

export async function waitFor<T>(what: string | (() => string), check: () => T | undefined | Promise<T | undefined>, ms = 20_000, proc?: Proc): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    if (proc && proc.child.exitCode !== null)
      throw new Error(`the process ended (exit ${proc.child.exitCode}) before ${typeof what === "string" ? what : what()}: ${proc.log()}`);
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${typeof what === "string" ? what : what()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `runtime serve --store URL --port 0`: its URL and token, read from what it prints. */
export async function serve(team: string, url: string): Promise<{ url: string; token: string; proc: Proc }> {
  const proc = start(["serve", team, "--store", url, "--port", "0"]);
  const match = await waitFor(
    () => `the server to start (stderr: ${proc.log()})`,
    () => /open (http:\/\/[^/\s]+)\/\?token=([^;\s]+)/.exec(proc.log()) ?? undefined,
    20_000,
    proc,
  );
  return { url: match[1]!, token: decodeURIComponent(match[2]!), proc };
}

export async function worker(team: string, url: string, extra: string[] = []): Promise<Proc> {
  const proc = start(["worker", team, "--store", url, "--concurrency", "2", "--lease-ms", "1500", ...extra]);
  await waitFor(
    () => `the worker to start (stderr: ${proc.log()})`,
    () => proc.log().includes("takes runs of") || undefined,
    20_000,
    proc,
  );
  return proc;
}

/** The tag (`job-N`) of a request's user message. */
export function tagOf(body: ChatBody): string {
  const text = JSON.stringify(body.messages);
  return /job-[\w-]+/.exec(text)?.[0] ?? "none";
}

/** A team whose agent calls `record` (each call appends its `tag` to `effects`), then answers. */
export function recordingTeam(modelUrl: string, effects: string, agentTools = "[record]"): string {
  return writeTeam(
    `version: 1
name: scale
models:
  default: { provider: openai, model: m, base_url: "${modelUrl}", api_key: sk-scale-0123456789, max_retries: 0 }
tools:
  record:
    command: [node, ./record.mjs]
    description: Record that a job was done.
    parameters: { type: object, properties: { tag: { type: string } }, required: [tag] }
    env: { EFFECTS: "${effects}" }
agents:
  solver:
    kind: react
    tools: ${agentTools}
`,
    {
      "record.mjs": `import { appendFileSync } from "node:fs";
let input = "";
process.stdin.on("data", (d) => (input += d)).on("end", () => {
  const { tag } = JSON.parse(input);
  appendFileSync(process.env.EFFECTS, tag + "\\n");
  process.stdout.write(JSON.stringify({ recorded: tag }));
});`,
    },
  );
}

/** How many tool rounds the react agent has behind it: its recursion adds a message per round. */
export const toolMessages = (body: ChatBody) => (body.messages as unknown[]).length - 2;
export const answer = (text: string): Reply => ({ content: reactReply("ANSWER", { answer: text }) });

/** POST a run to a server and read its whole event stream. */
export async function post(server: { url: string; token: string }, input: string): Promise<{ task: string; events: Sse[] }> {
  const response = await authedFetch(server.token)(`${server.url}/v1/runs`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ input }),
  });
  expect(response.status).toBe(200);
  const task = response.headers.get("x-task-id") ?? "";
  return { task, events: parseSse(await response.text()) };
}

/** The lines of a file of side effects (none when it does not exist). */
export function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

/** The queue's rows (runtime.run_requests), oldest first. */
export async function requests(
  url: string,
): Promise<{ task_id: string; state: string; attempts: number; worker_id: string | null; result_type: string | null }[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query("SELECT task_id, state, attempts, worker_id, result_type FROM runtime.run_requests ORDER BY created_at")).rows;
  } finally {
    await client.end();
  }
}

/** A stack trace's frame line, as Node prints one. */
export const STACK_FRAME = /^\s+at .+\(.*:\d+:\d+\)$|^\s+at .+:\d+:\d+$/m;

/** The model servers a test file starts, closed after each test, when every process it spawned is SIGKILLed too. */
export function useFleet(): OpenAIServer[] {
  const servers: OpenAIServer[] = [];
  afterEach(async () => {
    killAll();
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });
  return servers;
}
