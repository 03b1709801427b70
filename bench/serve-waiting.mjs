#!/usr/bin/env node
/**
 * Benchmark: many runs waiting on a slow model in one `runtime serve`
 * (docs/performance.md#runs-waiting-on-a-slow-model), beside the same tasks
 * in a minimal loop on the `openai` client.
 *
 * A spawned `runtime serve` (the embedded SQLite store, the default) runs
 * the bench's react team against bench/lib/chat-server.mjs (its own
 * process), whose every reply waits --latency ms: --steps model calls a run
 * (a calculator call each but the last), so that all --runs runs wait on the
 * model at once. This process is the clients: each run is started with its
 * own stream, `POST /v1/runs` (--via runs) or the OpenAI-compatible
 * `POST /v1/chat/completions` with `stream: true` (--via chat), at most
 * --open of them waiting for their response headers at a time. Printed:
 *
 *   1. the serve process's RSS before the load and its peak (sampled from
 *      /proc every 100 ms), and the peak less the baseline per run; the
 *      most replies the model held waiting at once; runs that failed (a
 *      non-200, a stream without its end, a gap in seq, another answer);
 *      the time from the first request to the last answer; the serve's CPU
 *   2. latency: each event's bus `ts` to its parse here (--via runs), and
 *      the model's answer, from the moment the model sent it (it stamps it)
 *      to its parse here, through the runtime
 *   3. the same tasks, as many at once and started at the same pace, in
 *      bench/lib/openai-loop.mjs (one `openai` client in a process of its
 *      own): its peak RSS less its baseline per task, and the ratio
 *
 *   npm run build && node bench/serve-waiting.mjs [--quick] [--runs 10000] [--latency 90000]
 *     [--rate 200] [--steps 2] [--via runs|chat|both] [--stream] [--open 256] [--node-options="..."]
 *
 * --quick: 1,000 runs, 10 s latency. --rate: runs started a second at most
 * (default 200: 10,000 in 50 s, all waiting before the first reply comes).
 * --stream: the team's model streams. --node-options: NODE_OPTIONS of the
 * serve process alone (`--node-options=--heapsnapshot-signal=SIGUSR2`, say, to look at what
 * its runs hold while they wait).
 *
 * File descriptors: a waiting run holds two sockets in the serve process,
 * its client's and its model request's. Where the process's limit (ulimit
 * -n) cannot hold two for every run (past it, the serve resets the
 * connections it cannot accept and fails the model requests it cannot
 * open), the runs past it are started with
 * `POST /v1/runs` and `Prefer: respond-async` (no stream held, whatever
 * --via says) and checked at the end through `GET /v1/runs/:id`; the bench
 * says how many.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Worker } from "node:worker_threads";
import { calculate } from "../dist/tools/builtin/calculator.js";
import { benchTeamYaml, loadLine, startChatServer } from "./lib/bench-team.mjs";
import { fixed, printTable } from "./lib/stats.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    runs: { type: "string" },
    latency: { type: "string" },
    steps: { type: "string", default: "2" },
    via: { type: "string", default: "runs" },
    stream: { type: "boolean", default: false },
    open: { type: "string", default: "256" },
    rate: { type: "string" },
    "node-options": { type: "string" },
  },
});
const RUNS = Number(values.runs ?? (values.quick ? 1000 : 10_000));
const LATENCY = Number(values.latency ?? (values.quick ? 10_000 : 90_000));
/** Runs started a second at most: the serve's CPU, not the clients' haste, sets the figures. */
const RATE = Number(values.rate ?? 200);
const STEPS = Number(values.steps);
const OPEN = Number(values.open);
const VIAS = values.via === "both" ? ["runs", "chat"] : [values.via];
for (const [name, n] of Object.entries({ runs: RUNS, latency: LATENCY, steps: STEPS, open: OPEN, rate: RATE })) {
  if (!Number.isInteger(n) || n < 1) {
    console.error(`serve-waiting: --${name} must be a positive whole number`);
    process.exit(2);
  }
}
if (!VIAS.every((v) => v === "runs" || v === "chat")) {
  console.error("serve-waiting: --via is runs, chat or both");
  process.exit(2);
}
const MB = 1024 * 1024;
const TOKEN = "bench-token-0123456789abcdef";
const TEAM = "serve-waiting";
const EXPECTED = STEPS > 1 ? `last=${await calculate(`round(pi * ${STEPS - 1}^2, 2)`)}` : "last=none";
/** The task; `stamp=1` has the model stamp its answer with the moment it sent it. */
const taskInput = (i, extra = "stamp=1") => `Compute the areas of circles of radius 1, 2, 3... steps=${STEPS} ${extra} run=${i}`;
// Whatever happens, the bench stops by itself.
setTimeout(
  () => {
    console.error("serve-waiting: watchdog: still running long after the runs should have ended; exiting");
    process.exit(1);
  },
  (VIAS.length + 1) * (STEPS * LATENCY + 600_000),
).unref();

// ---------------------------------------------------------------- a process's memory, CPU and descriptors (Linux /proc)

const statusOf = (pid) => readFileSync(`/proc/${pid}/status`, "utf8");
const kB = (status, field) => Number(new RegExp(`^${field}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? NaN) * 1024;
const rssOf = (pid) => kB(statusOf(pid), "VmRSS");
/** CPU ms (user + system) the process has used; stat(5) fields 14 and 15, in ticks of 10 ms. */
function cpuOf(pid) {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
const openFiles = (pid) => readdirSync(`/proc/${pid}/fd`).length;
const fileLimit = (pid) => Number(/^Max open files\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/limits`, "utf8"))?.[1] ?? Infinity);

/** A worker thread sampling a process's RSS every 100 ms, whatever this event loop is doing; `stop` gives the peak. */
function rssSampler(pid) {
  const worker = new Worker(
    `const { readFileSync } = require("node:fs");
     const { parentPort, workerData } = require("node:worker_threads");
     let peak = 0;
     const tick = () => {
       try {
         const kb = Number(/^VmRSS:\\s+(\\d+)/m.exec(readFileSync("/proc/" + workerData + "/status", "utf8"))[1]);
         peak = Math.max(peak, kb * 1024);
       } catch {}
     };
     tick();
     setInterval(tick, 100);
     parentPort.on("message", () => { tick(); parentPort.postMessage(peak); });`,
    { eval: true, workerData: pid },
  );
  return {
    stop: () =>
      new Promise((resolve) => {
        worker.once("message", (peak) => {
          void worker.terminate();
          resolve(peak);
        });
        worker.postMessage("read");
      }),
  };
}

// ---------------------------------------------------------------- the server

/** Start `runtime serve` on a free port; resolves with its pid, port and a stop function. */
async function startRuntime(teamFile, traceDir) {
  const args = ["serve", teamFile, "--port", "0", "--token", TOKEN, "--rate", "1000000", "--max-runs", String(RUNS * 2), "--trace-dir", traceDir];
  const env = values["node-options"] ? { ...process.env, NODE_OPTIONS: values["node-options"] } : process.env;
  const child = spawn(process.execPath, [join(ROOT, "bin/runtime.js"), ...args], { stdio: ["ignore", "ignore", "pipe"], env, cwd: dirname(traceDir) });
  let log = "";
  const port = await new Promise((resolve, reject) => {
    child.stderr.on("data", (c) => {
      log += c;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)\//.exec(log);
      if (m) resolve(Number(m[1]));
    });
    child.once("exit", (code) => reject(new Error(`runtime serve exited (${code}) before listening:\n${log}`)));
  });
  return {
    pid: child.pid,
    port,
    log: () => log,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", resolve);
        child.kill("SIGTERM");
      }),
  };
}

// ---------------------------------------------------------------- the clients

/** Connections of their own, closed when the stream ends: a waiting run holds one, as a browser's would. */
const agent = new Agent({ keepAlive: false, maxSockets: Infinity });

/** Every SSE frame's data in `chunk` (with what was left of the last chunk), the rest kept for the next. */
function frames(state, chunk) {
  state.buffer += chunk;
  const out = [];
  for (let end = state.buffer.indexOf("\n\n"); end >= 0; end = state.buffer.indexOf("\n\n")) {
    const frame = state.buffer.slice(0, end);
    state.buffer = state.buffer.slice(end + 2);
    let data = "";
    for (const line of frame.split("\n")) if (line.startsWith("data: ")) data += line.slice(6);
    if (data) out.push(data);
  }
  return out;
}

/** The answer's way through the runtime: now less the ` sent=` stamp the model put on it; NaN when it is not the expected one. */
function answerLatency(answer) {
  const m = /^(.*) sent=(\d+)$/.exec(answer ?? "");
  return m && m[1] === EXPECTED ? Date.now() - Number(m[2]) : NaN;
}

/**
 * One run through the server, on a stream of its own. `headers` resolves
 * when the response began (the run is going); `done` with what the stream
 * showed: failure (undefined when none), the events' latencies, the answer's.
 */
function streamedRun(port, via, input) {
  let began;
  const headers = new Promise((resolve) => (began = resolve));
  const done = new Promise((resolve) => {
    const out = { failure: undefined, latencies: [], answer: NaN };
    const body = via === "runs" ? JSON.stringify({ input }) : JSON.stringify({ model: TEAM, messages: [{ role: "user", content: input }], stream: true });
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path: via === "runs" ? "/v1/runs" : "/v1/chat/completions",
        agent,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "content-length": Buffer.byteLength(body) },
      },
      (res) => {
        began();
        res.on("error", (err) => (out.failure ??= err.message));
        if (res.statusCode !== 200) {
          out.failure = `HTTP ${res.statusCode}`;
          res.resume();
          res.on("end", () => resolve(out));
          return;
        }
        res.setEncoding("utf8");
        const state = { buffer: "" };
        let expect = 1;
        let finished = false;
        let text = "";
        res.on("data", (chunk) => {
          for (const data of frames(state, chunk)) {
            if (via === "chat") {
              if (data === "[DONE]") {
                finished = true;
                out.answer = answerLatency(text);
                if (Number.isNaN(out.answer)) out.failure ??= `answered ${text.slice(0, 120)}`;
                continue;
              }
              text += JSON.parse(data).choices?.[0]?.delta?.content ?? "";
              continue;
            }
            const event = JSON.parse(data);
            out.latencies.push(Date.now() - Date.parse(event.ts));
            if (event.seq !== expect) out.failure ??= "a gap in seq";
            expect = event.seq + 1;
            if (event.type === "run.finished") {
              finished = true;
              out.answer = answerLatency(event.answer);
              if (Number.isNaN(out.answer)) out.failure ??= `answered ${String(event.answer ?? event.error).slice(0, 120)}`;
            }
          }
        });
        res.on("close", () => {
          if (!finished) out.failure ??= "the stream ended before the run did";
          else if (Number.isNaN(out.answer)) out.failure ??= `another answer than ${EXPECTED}`;
          resolve(out);
        });
      },
    );
    req.on("error", (err) => {
      began();
      out.failure ??= err.message;
      resolve(out);
    });
    req.end(body);
  });
  return { headers, done };
}

/** A JSON request on a connection closed after it (so that it holds no descriptor of the server's once answered). */
function jsonRequest(port, method, path, body, extra = {}) {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const headers = { authorization: `Bearer ${TOKEN}`, connection: "close", ...extra };
    if (text !== undefined) Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
    const req = request({ host: "127.0.0.1", port, method, path, agent, headers }, (res) => {
      let data = "";
      res.setEncoding("utf8");
      res.on("data", (c) => (data += c));
      res.on("error", reject);
      res.on("end", () => resolve({ status: res.statusCode, body: data ? JSON.parse(data) : undefined }));
    });
    req.on("error", reject);
    req.end(text);
  });
}

/** A run started with `Prefer: respond-async`, no stream held; `done` polls `GET /v1/runs/:id` until it has ended. */
function asyncRun(port, i) {
  const started = jsonRequest(port, "POST", "/v1/runs", { input: taskInput(i) }, { prefer: "respond-async" });
  const done = started.then(
    async ({ status, body }) => {
      if (status !== 202) return { failure: `HTTP ${status}`, latencies: [], answer: NaN };
      for (;;) {
        await new Promise((r) => setTimeout(r, 1000 + Math.random() * 2000));
        const run = await jsonRequest(port, "GET", `/v1/runs/${encodeURIComponent(body.task_id)}`).catch((err) => ({ error: err }));
        if (run.error) return { failure: `polling: ${run.error.message}`, latencies: [], answer: NaN };
        if (run.body?.live) continue;
        const finished = run.body?.events?.find((e) => e.type === "run.finished");
        const ok = finished?.answer?.startsWith(`${EXPECTED} sent=`);
        return { failure: ok ? undefined : `answered ${String(finished?.answer ?? finished?.error).slice(0, 120)}`, latencies: [], answer: NaN };
      }
    },
    (err) => ({ failure: err.message, latencies: [], answer: NaN }),
  );
  return { headers: started.catch(() => {}), done };
}

/** Start `count` runs, RATE a second at most, at most OPEN waiting for their response headers at a time; resolves with every run's `done`. */
async function launch(count, start) {
  const runs = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(OPEN, count) }, async () => {
      while (next < count) {
        const i = next++;
        const wait = t0 + (i * 1000) / RATE - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const run = start(i);
        runs.push(run.done);
        await run.headers;
      }
    }),
  );
  return runs;
}

// ---------------------------------------------------------------- figures

function quantile(sorted, q) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] : NaN;
}
const latencyRow = (name, samples) => {
  const s = Float64Array.from(samples).sort();
  return [name, s.length, fixed(quantile(s, 0.5), 0), fixed(quantile(s, 0.99), 0), fixed(s.length ? s[s.length - 1] : NaN, 0)];
};
const mb = (bytes) => fixed(bytes / MB, 1);
const kbEach = (bytes, n) => fixed(bytes / n / 1024, 1);

// ---------------------------------------------------------------- one serve

async function serveLoad(via, chat, dir) {
  const teamFile = join(dir, `team-${via}.yaml`);
  writeFileSync(teamFile, benchTeamYaml(chat.url, TEAM, { stream: values.stream, timeoutMs: LATENCY + 60_000 }));
  const runtime = await startRuntime(teamFile, join(dir, `trace-${via}`));
  try {
    // Warm-up with no model latency: module loading, the JIT, the store's files.
    for (let w = 0; w < 3; w++) {
      const warm = await Promise.all(Array.from({ length: 20 }, (_, i) => streamedRun(runtime.port, via, taskInput(`warm${w}-${i}`, "stamp=1 delay=0")).done));
      const failed = warm.find((r) => r.failure);
      if (failed) throw new Error(`warm-up run failed: ${failed.failure}\n${runtime.log()}`);
    }
    await new Promise((r) => setTimeout(r, 500));
    const baseline = rssOf(runtime.pid);
    // A socket a run for its model request, one more a streamed run for its client, and a margin (the store's files, polls,
    // model connections idle for a moment between a run's two calls).
    const streamable = Math.max(0, fileLimit(runtime.pid) - openFiles(runtime.pid) - 1000 - RUNS);
    const streamed = Math.min(RUNS, streamable);
    await fetch(`${chat.url.replace(/\/v1$/, "")}/load?reset=1`);
    const sampler = rssSampler(runtime.pid);
    const cpu0 = cpuOf(runtime.pid);
    const started = performance.now();
    const runs = await launch(RUNS, (i) => (i < streamed ? streamedRun(runtime.port, via, taskInput(i)) : asyncRun(runtime.port, i)));
    const launched = (performance.now() - started) / 1000;
    const results = await Promise.all(runs);
    const wall = (performance.now() - started) / 1000;
    const peak = await sampler.stop();
    const cpu = cpuOf(runtime.pid) - cpu0;
    const model = await (await fetch(`${chat.url.replace(/\/v1$/, "")}/load`)).json();
    const said = runtime.log().split("\n").slice(2).join("\n").trim();
    if (said) console.error(`serve-waiting: runtime serve (--via ${via}) said:\n${said.slice(-2000)}`);
    return { via, baseline, peak, results, launched, wall, cpu, streamed, streamable, modelPeak: model.peak };
  } finally {
    await runtime.stop();
  }
}

/** The same tasks in bench/lib/openai-loop.mjs: its RSS after warming up and its peak with RUNS at once. */
async function openaiLoad(chat) {
  const child = spawn(
    process.execPath,
    [
      join(ROOT, "bench/lib/openai-loop.mjs"),
      ...["--url", chat.url, "--runs", String(RUNS), "--rate", String(RATE), "--steps", String(STEPS), "--input", taskInput("loop", "")],
    ],
    { stdio: ["pipe", "pipe", "inherit"] },
  );
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  await lines.next();
  await new Promise((r) => setTimeout(r, 500));
  const baseline = rssOf(child.pid);
  const sampler = rssSampler(child.pid);
  child.stdin.write("go\n");
  const result = JSON.parse((await lines.next()).value);
  const peak = Math.max(await sampler.stop(), kB(statusOf(child.pid), "VmHWM"));
  child.kill();
  return { baseline, peak, ...result };
}

// ---------------------------------------------------------------- main

const dir = mkdtempSync(join(tmpdir(), "bench-serve-waiting-"));
const chat = await startChatServer(LATENCY);
try {
  console.log(
    `serve-waiting: ${RUNS} runs at once in one runtime serve (embedded SQLite store), ${STEPS} model calls a run, ` +
      `each reply after ${LATENCY} ms${values.stream ? ", streamed" : ""}; runs started at ${RATE}/s at most, ${OPEN} awaiting their response headers at most; node ${process.version}`,
  );
  console.log(`   ${loadLine()}\n`);
  const serves = [];
  for (const via of VIAS) serves.push(await serveLoad(via, chat, dir));
  const loop = await openaiLoad(chat);
  const loopEach = (loop.peak - loop.baseline) / RUNS;

  console.log("1. Memory and outcome (RSS from /proc every 100 ms; per run: peak less the baseline, over the runs)");
  printTable(
    ["", "baseline RSS MB", "peak RSS MB", "KB a run", "÷ openai loop", "model's most waiting", "failed", "started in s", "all done in s", "CPU ms a run"],
    [
      ...serves.map((s) => [
        `runtime serve, ${s.via === "runs" ? "POST /v1/runs" : "chat completions, stream"}`,
        mb(s.baseline),
        mb(s.peak),
        kbEach(s.peak - s.baseline, RUNS),
        `${fixed((s.peak - s.baseline) / RUNS / loopEach)}×`,
        s.modelPeak,
        s.results.filter((r) => r.failure).length,
        fixed(s.launched, 1),
        fixed(s.wall, 1),
        fixed(s.cpu / RUNS, 1),
      ]),
      ["openai loop, one client", mb(loop.baseline), mb(loop.peak), kbEach(loopEach * RUNS, RUNS), "1.00×", "", loop.failed, "", fixed(loop.wall, 1), ""],
    ],
  );
  for (const s of serves) {
    if (s.streamed < RUNS) {
      console.log(
        `   ${s.via}: ${RUNS - s.streamed} runs started with Prefer: respond-async (no stream): the serve's descriptors hold ${s.streamable} streamed runs (two sockets each)`,
      );
    }
  }
  const reasons = new Map();
  for (const s of serves) for (const r of s.results) if (r.failure) reasons.set(`${s.via}: ${r.failure}`, (reasons.get(`${s.via}: ${r.failure}`) ?? 0) + 1);
  if (loop.error) reasons.set(`openai loop: ${loop.error}`, loop.failed);
  for (const [reason, n] of reasons) console.log(`   failed: ${n} × ${reason}`);

  console.log("\n2. Latency (ms): an event's bus ts to its parse here; the answer from the model's sending it to its parse here");
  printTable(
    ["", "samples", "p50", "p99", "max"],
    serves.flatMap((s) => [
      ...(s.via === "runs"
        ? [
            latencyRow(
              "POST /v1/runs, every event",
              s.results.flatMap((r) => r.latencies),
            ),
          ]
        : []),
      latencyRow(`${s.via === "runs" ? "POST /v1/runs" : "chat completions"}, the answer`, s.results.map((r) => r.answer).filter(Number.isFinite)),
    ]),
  );
  console.log(`\n${loadLine()}`);
  if (reasons.size) process.exitCode = 1;
} finally {
  chat.stop();
  agent.destroy();
  rmSync(dir, { recursive: true, force: true });
}
