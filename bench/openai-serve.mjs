#!/usr/bin/env node
/**
 * Benchmark: OpenAI-compatible serving (docs/protocols.md#openai-compatible).
 * --clients streaming clients at once (the `openai` package, `stream: true`
 * with `stream_options.include_usage`), each sending chat completions one
 * after another until --total have been made, against a spawned `runtime
 * serve` whose team's model (bench/lib/chat-server.mjs, its own process)
 * replies after a fixed --delay. The same clients against the model itself
 * first: its own time to first token. Printed: completions per second, and
 * time to first token (request sent to the first content delta read) p50 and
 * p99 through the runtime and straight from the model, and the difference
 * (what serving through the runtime adds), with failures (a non-200, an
 * answer other than the model's, a stream without its usage chunk). Beside
 * them, the same runs through the runtime's own `POST /v1/runs` (time to
 * its run.finished, which carries the answer), and the server process's CPU
 * per completion in each (Linux: /proc).
 *
 *   npm run build && node bench/openai-serve.mjs [--quick] [--clients 50] [--total 500] [--delay 200]
 *
 * The clients run in this process, the runtime server and the model in
 * processes of their own. The team answers in one model call (one step), so
 * the runtime's part is one run: launch, one model request, the store's
 * writes, the follow, the reply.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { benchTeamYaml, loadLine, startChatServer } from "./lib/bench-team.mjs";
import { fixed, printTable } from "./lib/stats.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    clients: { type: "string" },
    total: { type: "string" },
    delay: { type: "string", default: "200" },
  },
});
const CLIENTS = Number(values.clients ?? (values.quick ? 10 : 50));
const TOTAL = Number(values.total ?? (values.quick ? 50 : 500));
const DELAY = Number(values.delay);
const WARMUP = Math.min(CLIENTS, 20);
for (const [name, n] of Object.entries({ clients: CLIENTS, total: TOTAL, delay: DELAY })) {
  if (!Number.isFinite(n) || n < 0 || (name !== "delay" && n === 0)) {
    console.error(`openai-serve: --${name} must be a ${name === "delay" ? "non-negative" : "positive"} number`);
    process.exit(2);
  }
}
// Whatever happens, the bench stops by itself.
setTimeout(() => {
  console.error("openai-serve: watchdog: still running after 10 minutes; exiting");
  process.exit(1);
}, 600_000).unref();

/** The q-quantile (0..1) of a list of numbers, nearest rank. */
function quantile(values, q) {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))];
}

/** CPU ms (user + system) a process has used so far, from /proc; NaN where there is none. */
function cpuOf(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    // utime and stime, fields 14 and 15 of stat(5), in clock ticks (100 a second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return NaN;
  }
}

/** Start `runtime serve` on a free port; resolves with its URL and a stop function. */
async function startRuntime(teamFile, traceDir, token) {
  const args = [
    join(ROOT, "bin/runtime.js"),
    "serve",
    teamFile,
    "--port",
    "0",
    "--token",
    token,
    "--rate",
    "100000",
    "--max-runs",
    String(CLIENTS * 2),
    "--trace-dir",
    traceDir,
  ];
  const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  const url = await new Promise((resolve, reject) => {
    let text = "";
    child.stderr.on("data", (c) => {
      text += c;
      const m = /listening on (http:\/\/\S+?)\/ /.exec(text);
      if (m) resolve(m[1]);
    });
    child.once("exit", (code) => reject(new Error(`runtime serve exited (${code}) before listening:\n${text}`)));
  });
  return {
    url,
    cpu: () => cpuOf(child.pid),
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", resolve);
        child.kill("SIGTERM");
      }),
  };
}

/**
 * `total` requests from at most CLIENTS clients at once, each timed by
 * `measure(i)` (ms to its first token; throws when it did not come whole):
 * the rate of those that did, their times, and how many failed.
 */
async function drive(total, label, measure) {
  const ttft = [];
  let failures = 0;
  let next = 0;
  let firstError;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(CLIENTS, total) }, async () => {
      while (next < total) {
        try {
          ttft.push(await measure(next++));
        } catch (err) {
          failures++;
          firstError ??= err;
        }
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  if (firstError) console.error(`openai-serve: first failure (${label}): ${firstError.message ?? firstError}`);
  return { rate: ttft.length / seconds, ttft, failures };
}

/**
 * Streamed completions: time to the first content delta, and whether it came
 * whole (the expected answer and a usage chunk).
 */
function load(baseURL, apiKey, model, total, expected) {
  const client = new OpenAI({ baseURL, apiKey, maxRetries: 0, timeout: 60_000 });
  return drive(total, model, async (i) => {
    const sent = performance.now();
    let first;
    let text = "";
    let usage;
    const stream = await client.chat.completions.create({
      model,
      messages: [{ role: "user", content: `steps=1 run=${i}` }],
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const chunk of stream) {
      const delta = chunk.choices[0]?.delta?.content;
      if (delta && first === undefined) first = performance.now() - sent;
      text += delta ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    if (first === undefined || !expected(text) || !usage) throw new Error(`incomplete stream: ${JSON.stringify(text).slice(0, 200)}`);
    return first;
  });
}

/** The same through `POST /v1/runs`: time to the run.finished event, whose answer is checked. */
function loadRuns(url, token, total, expected) {
  return drive(total, "POST /v1/runs", async (i) => {
    const sent = performance.now();
    const res = await fetch(`${url}/v1/runs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ input: `steps=1 run=${i}` }),
    });
    if (res.status !== 200) throw new Error(`status ${res.status}`);
    let text = "";
    let finished;
    for await (const chunk of res.body.pipeThrough(new TextDecoderStream())) {
      text += chunk;
      const at = text.indexOf("event: run.finished\n");
      if (at >= 0 && finished === undefined && text.indexOf("\n\n", at) > 0) finished = performance.now() - sent;
    }
    const data = /event: run\.finished\ndata: (.*)\n/.exec(text)?.[1];
    if (finished === undefined || !expected(JSON.parse(data ?? "{}").answer ?? "")) throw new Error("no answer");
    return finished;
  });
}

/** A load's figures with the server's CPU per completion spent meanwhile. */
async function withCpu(server, fn) {
  const before = server.cpu();
  const result = await fn();
  return { ...result, cpu: (server.cpu() - before) / Math.max(1, result.ttft.length) };
}

const dir = mkdtempSync(join(tmpdir(), "openai-serve-"));
const model = await startChatServer(DELAY);
let runtime;
try {
  const teamFile = join(dir, "team.yaml");
  // The model streams, so the answer reaches the clients as it is written (docs/protocols.md#answers-as-they-are-written).
  writeFileSync(teamFile, benchTeamYaml(model.url, "openai-bench", { stream: true }));
  const token = "bench-token-0123456789abcdef";
  runtime = await startRuntime(teamFile, join(dir, "trace"), token);
  console.log(`openai-serve: ${CLIENTS} streaming clients, ${TOTAL} completions each way, model replies after ${DELAY} ms; ${loadLine()}`);

  // The model's own answer is the react protocol's JSON; the runtime's is the answer inside it.
  const direct = await load(model.url, "bench-key", "bench-model", TOTAL, (t) => t.includes("last=none"));
  await load(`${runtime.url}/v1`, token, "openai-bench", WARMUP, (t) => t === "last=none");
  const served = await withCpu(runtime, () => load(`${runtime.url}/v1`, token, "openai-bench", TOTAL, (t) => t === "last=none"));
  await loadRuns(runtime.url, token, WARMUP, (t) => t === "last=none");
  const runs = await withCpu(runtime, () => loadRuns(runtime.url, token, TOTAL, (t) => t === "last=none"));

  const row = (name, r) => [
    name,
    fixed(r.rate, 1),
    fixed(quantile(r.ttft, 0.5), 1),
    fixed(quantile(r.ttft, 0.99), 1),
    r.cpu === undefined ? "" : fixed(r.cpu, 1),
    r.failures,
  ];
  printTable(
    ["", "completions/s", "TTFT p50 ms", "TTFT p99 ms", "server CPU ms each", "failures"],
    [
      row("the model itself", direct),
      row("through runtime serve", served),
      row("POST /v1/runs, to run.finished", runs),
      [
        "added by the runtime",
        "",
        fixed(quantile(served.ttft, 0.5) - quantile(direct.ttft, 0.5), 1),
        fixed(quantile(served.ttft, 0.99) - quantile(direct.ttft, 0.99), 1),
        "",
        "",
      ],
    ],
  );
  if (served.failures || direct.failures || runs.failures) process.exitCode = 1;
} finally {
  await runtime?.stop();
  model.stop();
  rmSync(dir, { recursive: true, force: true });
}
