#!/usr/bin/env node
/**
 * Benchmark: `runtime serve` under load. N runs at once, each streamed to the
 * client that started it (POST /v1/runs) and to F followers
 * (GET /v1/runs/:id/events, connected as soon as the x-task-id header is
 * known), until --total runs have been made or the hard stop.
 *
 * The model is bench/lib/chat-server.mjs (its own process on 127.0.0.1, so its
 * CPU is not counted here), answering a --steps tool loop like
 * bench/react-loop.mjs. The runtime server and every HTTP client run in this
 * process, on one event loop: the clients' work shares the CPU with the
 * server's, so the figures are pessimistic for the server alone.
 *
 *   1. runs per second and failures (any non-200, a stream without run.finished,
 *      a gap in seq, a run that did not answer), beside the same runs through
 *      the library's runTeam with no HTTP server (measured in the same process run)
 *   2. event latency, bus to client: now minus the event's `ts` (stamped by
 *      the bus when it emitted the event; same process, same clock, both in
 *      whole milliseconds) when the client has parsed it; the run's own stream
 *      and the followers apart. A follower's catch-up (events emitted before its
 *      response began, sent from the run's backlog or the store) is shown apart
 *      from the events it got live. Also: request to response headers, and the
 *      event-loop delay.
 *   3. memory: RSS before the load; peak RSS (sampled every 50 ms by a worker
 *      thread, so a busy event loop does not thin the samples) and peak
 *      heapUsed (sampled every 50 ms on the main thread, as far as it can)
 *
 *   npm run build && node bench/serve-load.mjs [--quick] [--runs 50] [--followers 4]
 *     [--total 200] [--steps 10] [--latency MS] [--max-seconds 120] [--new-connections]
 *
 * The clients keep their connections alive, and the pool is opened before the
 * load (one connection per stream that can be open at once), so the figures
 * are those of streaming, not of connecting. --new-connections opens a
 * connection for every request instead, as separate browsers would: a busy
 * Node process accepts one connection per event-loop iteration (libuv >= 1.45,
 * libuv/libuv#3696), so followers then wait in the accept queue for seconds
 * and the runs that wait for them take longer.
 *
 * --latency delays every model reply (default 0: runs are as short as they
 * can be and the process is CPU-bound, the worst case for the server's
 * per-event cost and for latency; real models take 100s of ms).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Worker } from "node:worker_threads";
import { loadTeam, runTeam } from "../dist/index.js";
import { calculate } from "../dist/tools/builtin/calculator.js";
import { startServer as startRuntimeServer } from "../dist/server/server.js";
import { benchTeamYaml, loadLine, startChatServer } from "./lib/bench-team.mjs";
import { fixed, printTable } from "./lib/stats.mjs";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    runs: { type: "string" },
    followers: { type: "string" },
    total: { type: "string" },
    steps: { type: "string", default: "10" },
    latency: { type: "string", default: "0" },
    "max-seconds": { type: "string" },
    "new-connections": { type: "boolean", default: false },
  },
});
const QUICK = values.quick;
const RUNS = Number(values.runs ?? (QUICK ? 10 : 50));
const FOLLOWERS = Number(values.followers ?? (QUICK ? 2 : 4));
const TOTAL = Number(values.total ?? (QUICK ? 30 : 200));
const STEPS = Number(values.steps);
const LATENCY = Number(values.latency);
/** The hard stop of each measured phase: no run starts after it, and what is still streaming is cut. */
const MAX_SECONDS = Number(values["max-seconds"] ?? (QUICK ? 6 : 120));
/** Every request on a connection of its own, as separate browsers would; else a warm keep-alive pool. */
const NEW_CONNECTIONS = values["new-connections"];
const WARMUP = QUICK ? 5 : 20;
const SAMPLE_MS = 50;
setFlagsFromString("--expose-gc");
/** A full collection, so that each phase starts from the same heap. */
const gc = runInNewContext("gc");
const MB = 1024 * 1024;

for (const [name, n] of Object.entries({ runs: RUNS, followers: FOLLOWERS, total: TOTAL, steps: STEPS, latency: LATENCY, "max-seconds": MAX_SECONDS })) {
  if (!Number.isFinite(n) || n < 0 || (name !== "followers" && name !== "latency" && n === 0)) {
    console.error(`serve-load: --${name} must be a ${name === "followers" || name === "latency" ? "non-negative" : "positive"} number`);
    process.exit(2);
  }
}

// Whatever happens, the process does not outlive both phases' hard stops by much.
const watchdog = setTimeout(
  () => {
    console.error("serve-load: watchdog: still running long after the hard stops; exiting");
    process.exit(1);
  },
  (2 * MAX_SECONDS + 60) * 1000,
);
watchdog.unref();

// ---------------------------------------------------------------- the model

const EXPECTED = STEPS > 1 ? `last=${await calculate(`round(pi * ${STEPS - 1}^2, 2)`)}` : "last=none";
const taskInput = (i) => `Compute the areas of circles of radius 1, 2, 3... steps=${STEPS} run=${i}`;

// ---------------------------------------------------------------- memory

/** A worker thread sampling the process's RSS every SAMPLE_MS, whatever the main event loop is doing. */
const RSS_WORKER = `
const { parentPort } = require("node:worker_threads");
let peak = 0, samples = 0;
const tick = () => { peak = Math.max(peak, process.memoryUsage.rss()); samples++; };
setInterval(tick, ${SAMPLE_MS});
parentPort.on("message", (m) => {
  tick();
  parentPort.postMessage({ peak, samples });
  if (m === "reset") { peak = 0; samples = 0; tick(); }
});
`;
const rssWorker = new Worker(RSS_WORKER, { eval: true });
const askRssWorker = (message) =>
  new Promise((resolve) => {
    rssWorker.once("message", resolve);
    rssWorker.postMessage(message);
  });

/** Samples RSS (worker thread) and heapUsed (this thread) every SAMPLE_MS; `stop` resolves with the peaks. */
async function memorySampler() {
  await askRssWorker("reset");
  const heap = { peak: 0, samples: 0 };
  const sample = () => {
    heap.peak = Math.max(heap.peak, process.memoryUsage().heapUsed);
    heap.samples++;
  };
  sample();
  const timer = setInterval(sample, SAMPLE_MS);
  return {
    async stop() {
      clearInterval(timer);
      sample();
      const rss = await askRssWorker("read");
      return { rss: rss.peak, rssSamples: rss.samples, heapUsed: heap.peak, heapSamples: heap.samples };
    },
  };
}

// ---------------------------------------------------------------- SSE clients

/**
 * One SSE request. Resolves (never rejects) with what the stream showed:
 * status, events, whether run.finished came and how, seq gaps, and the
 * latency of each event (ms from its `ts` to the moment it was parsed).
 */
function sseStream(server, active, { method, path, body, onTaskId }) {
  return new Promise((resolve) => {
    const sentAt = Date.now();
    const out = {
      status: 0,
      events: 0,
      finished: null,
      gaps: 0,
      latencies: [],
      catchUp: [],
      live: [],
      headersMs: NaN,
      fresh: false,
      error: undefined,
      cut: false,
    };
    const headers = { authorization: `Bearer ${server.token}`, accept: "text/event-stream" };
    if (body !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = Buffer.byteLength(body);
    }
    const req = request({ host: "127.0.0.1", port: server.port, method, path, headers, agent: server.agent }, (res) => {
      out.status = res.statusCode ?? 0;
      const headersAt = Date.now();
      out.headersMs = headersAt - sentAt;
      out.fresh = !req.reusedSocket;
      res.setEncoding("utf8");
      if (out.status !== 200) {
        let text = "";
        res.on("data", (c) => (text += c));
        res.on("end", () => {
          out.error = text.slice(0, 200);
          done();
        });
        res.on("error", () => done());
        return;
      }
      const taskId = res.headers["x-task-id"];
      if (onTaskId && typeof taskId === "string") onTaskId(taskId);
      let buffer = "";
      let expect = 1;
      res.on("data", (chunk) => {
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let data = "";
          for (const line of frame.split("\n")) {
            if (line.startsWith("data:")) data += line.slice(line.startsWith("data: ") ? 6 : 5);
          }
          if (!data) continue; // a keep-alive comment
          const event = JSON.parse(data);
          const emitted = Date.parse(event.ts);
          const latency = Date.now() - emitted;
          out.latencies.push(latency);
          // Emitted before the response began: sent from the run's backlog (or the store), not as it happened.
          (emitted <= headersAt ? out.catchUp : out.live).push(latency);
          out.events++;
          if (event.seq !== expect) out.gaps++;
          expect = event.seq + 1;
          if (event.type === "run.finished") out.finished = event;
        }
      });
      res.on("end", done);
      res.on("error", (err) => {
        out.error ??= err.message;
        done();
      });
      res.on("close", done);
    });
    let settled = false;
    function done() {
      if (settled) return;
      settled = true;
      active.delete(req);
      resolve(out);
    }
    req.on("error", (err) => {
      out.error ??= err.message;
      done();
    });
    req.cut = () => {
      out.cut = true;
      req.destroy();
    };
    active.add(req);
    req.end(body);
  });
}

/** Open `count` keep-alive connections to the server at once (GET /v1/team on each), so that the load finds them ready. */
async function openPool(server, count) {
  await Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise((resolve, reject) => {
          const req = request(
            { host: "127.0.0.1", port: server.port, path: "/v1/team", headers: { authorization: `Bearer ${server.token}` }, agent: server.agent },
            (res) => {
              res.resume();
              res.on("end", () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET /v1/team: HTTP ${res.statusCode}`))));
            },
          );
          req.on("error", reject);
          req.end();
        }),
    ),
  );
}

/** What went wrong with one stream, or undefined. */
function streamFailure(kind, s) {
  if (s.cut && !s.finished) return `${kind}: cut at the hard stop`;
  if (s.status !== 200) return s.status ? `${kind}: HTTP ${s.status}` : `${kind}: ${s.error ?? "no response"}`;
  if (!s.finished) return `${kind}: ended without run.finished${s.error ? ` (${s.error})` : ""}`;
  if (s.gaps) return `${kind}: gap in seq`;
  return undefined;
}

/** One run through the server: its own stream and FOLLOWERS followers. */
async function serverRun(server, active, i) {
  const followers = [];
  const own = await sseStream(server, active, {
    method: "POST",
    path: "/v1/runs",
    body: JSON.stringify({ input: taskInput(i) }),
    onTaskId: (id) => {
      for (let f = 0; f < FOLLOWERS; f++) {
        followers.push(sseStream(server, active, { method: "GET", path: `/v1/runs/${encodeURIComponent(id)}/events` }));
      }
    },
  });
  const follows = await Promise.all(followers);
  const failures = [];
  const ownFailure = streamFailure("run's own stream", own);
  if (ownFailure) failures.push(ownFailure);
  else if (own.finished.result_type !== "answer" || own.finished.answer !== EXPECTED) {
    failures.push(`run did not answer ${EXPECTED}: ${own.finished.error ?? own.finished.answer}`);
  }
  for (const f of follows) {
    const failure = streamFailure("follower", f);
    if (failure) failures.push(failure);
    else if (f.events !== own.events && !ownFailure) failures.push("follower: saw a different number of events than the run's own stream");
  }
  return { ok: failures.length === 0, completed: !ownFailure && own.finished.result_type === "answer", own, follows, failures };
}

/** One run through the library, no HTTP. */
async function libraryRun(team, traceDir, i) {
  const result = await runTeam(team, { input: taskInput(i), traceDir, trace: true }).result;
  const ok = result.result_type === "answer" && result.answer === EXPECTED;
  return { ok, completed: ok, failures: ok ? [] : [`run did not answer ${EXPECTED}: ${result.error ?? result.answer}`] };
}

/**
 * Keep `concurrency` runs going until `total` have started or the hard stop;
 * at the hard stop, `onHardStop` cuts what is still going.
 */
async function drive(concurrency, total, one, onHardStop = () => {}) {
  const started = performance.now();
  const results = [];
  let next = 0;
  let stopped = false;
  const stop = setTimeout(() => {
    stopped = true;
    onHardStop();
  }, MAX_SECONDS * 1000);
  const worker = async () => {
    while (!stopped && next < total) {
      const i = next++;
      results.push(await one(i));
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  clearTimeout(stop);
  return { results, wall: (performance.now() - started) / 1000, stopped };
}

// ---------------------------------------------------------------- figures

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

function latencyRow(name, streams, samples) {
  const sorted = Float64Array.from(samples).sort();
  return [
    name,
    streams,
    sorted.length,
    fixed(percentile(sorted, 50), 0),
    fixed(percentile(sorted, 95), 0),
    fixed(percentile(sorted, 99), 0),
    fixed(sorted.length ? sorted[sorted.length - 1] : NaN, 0),
  ];
}

const mb = (bytes) => fixed(bytes / MB, 1);

// ---------------------------------------------------------------- main

const started = performance.now();
const startRss = process.memoryUsage().rss;
const chat = await startChatServer(LATENCY);
const dir = mkdtempSync(join(tmpdir(), "bench-serve-load-"));
let runtime;
const agent = new Agent({ keepAlive: !NEW_CONNECTIONS, maxSockets: Infinity });
const active = new Set();
try {
  const teamFile = join(dir, "team.yaml");
  writeFileSync(teamFile, benchTeamYaml(chat.url, "bench-serve-load"));
  const team = await loadTeam(teamFile);
  const traceDir = join(dir, "traces");
  // Limits far above the load, so that the figures are the server's, not its 429s.
  runtime = await startRuntimeServer({ team, traceDir, port: 0, host: "127.0.0.1", rate: 1_000_000, maxLiveRuns: 100_000 });
  const server = { port: runtime.port, token: runtime.token, agent };

  console.log(
    `serve-load: ${STEPS}-step react runs through runtime serve, ${RUNS} concurrent, ${FOLLOWERS} follower(s) each, ` +
      `${TOTAL} runs in all (hard stop ${MAX_SECONDS} s), model latency ${LATENCY} ms, trace on, ` +
      `${NEW_CONNECTIONS ? "a new connection per request" : "keep-alive connections opened beforehand"}, ` +
      `node ${process.version}${QUICK ? ", --quick" : ""}`,
  );
  console.log(`   ${loadLine()}\n`);

  // Warm-up: module loading, JIT, connection pools, the trace database.
  await drive(Math.min(RUNS, WARMUP), WARMUP, (i) => serverRun(server, active, -1 - i));
  await drive(Math.min(RUNS, WARMUP), WARMUP, (i) => libraryRun(team, traceDir, -1 - i));
  if (!NEW_CONNECTIONS) await openPool(server, RUNS * (1 + FOLLOWERS));
  gc();
  await new Promise((r) => setTimeout(r, 200));
  const baselineRss = process.memoryUsage().rss;
  const baselineHeap = process.memoryUsage().heapUsed;

  // Through the server.
  let memory = await memorySampler();
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const served = await drive(
    RUNS,
    TOTAL,
    (i) => serverRun(server, active, i),
    () => {
      for (const req of [...active]) req.cut();
    },
  );
  const servedPeak = await memory.stop();
  loopDelay.disable();

  // The same number of runs through the library, the same concurrency.
  gc();
  await new Promise((r) => setTimeout(r, 200));
  memory = await memorySampler();
  const library = await drive(RUNS, served.results.length, (i) => libraryRun(team, traceDir, TOTAL + i));
  const libraryPeak = await memory.stop();

  // 1
  const rps = (phase) => phase.results.filter((r) => r.completed).length / phase.wall;
  const libraryRps = rps(library);
  console.log("1. Throughput (runs completed with the expected answer / wall time)");
  printTable(
    ["variant", "runs", "completed", "failed", "wall s", "runs/s", "library/variant", "hard stop"],
    [
      [`runtime serve, ${FOLLOWERS} follower(s) each`, served],
      ["runTeam (library, no HTTP)", library],
    ].map(([name, phase]) => [
      name,
      phase.results.length,
      phase.results.filter((r) => r.completed).length,
      phase.results.filter((r) => !r.ok).length,
      fixed(phase.wall),
      fixed(rps(phase), 1),
      rps(phase) > 0 ? `${fixed(libraryRps / rps(phase))}×` : "n/a",
      phase.stopped ? "REACHED" : "no",
    ]),
  );
  const streams = served.results.length * (1 + FOLLOWERS);
  const eventsPerRun = served.results.find((r) => r.own.finished)?.own.events ?? NaN;
  const delivered = served.results.reduce((n, r) => n + r.own.events + r.follows.reduce((m, f) => m + f.events, 0), 0);
  console.log(
    `   ${Number.isFinite(eventsPerRun) ? eventsPerRun : "?"} events per run; ${streams} SSE streams, ${delivered} events delivered ` +
      `(${fixed(delivered / served.wall, 0)} events/s); a run is failed when any of its streams failed`,
  );
  const reasons = new Map();
  for (const r of [...served.results, ...library.results]) for (const f of r.failures) reasons.set(f, (reasons.get(f) ?? 0) + 1);
  if (reasons.size) {
    console.log("\n   failures by cause (streams)");
    printTable(
      ["cause", "count"],
      [...reasons].sort((a, b) => b[1] - a[1]),
    );
  } else {
    console.log("   failures: none (no non-200, no 429, no stream without run.finished, no seq gap)");
  }

  // 2
  const owns = served.results.map((r) => r.own);
  const follows = served.results.flatMap((r) => r.follows);
  const liveFollowers = follows.filter((f) => f.live.length > 0);
  console.log("\n2. Event latency, bus to client (ms from the event's ts to its parsing; ts has whole-ms resolution)");
  printTable(
    ["stream", "streams", "events", "p50", "p95", "p99", "max"],
    [
      latencyRow(
        "run's own stream (POST /v1/runs)",
        owns.length,
        owns.flatMap((s) => s.latencies),
      ),
      latencyRow(
        "followers, all events",
        follows.length,
        follows.flatMap((s) => s.latencies),
      ),
      latencyRow(
        "followers, live events",
        liveFollowers.length,
        follows.flatMap((s) => s.live),
      ),
      latencyRow(
        "followers, catch-up",
        follows.filter((f) => f.catchUp.length).length,
        follows.flatMap((s) => s.catchUp),
      ),
      latencyRow("request to response headers, POST", owns.length, owns.map((s) => s.headersMs).filter(Number.isFinite)),
      latencyRow("request to response headers, followers", follows.length, follows.map((s) => s.headersMs).filter(Number.isFinite)),
      latencyRow(
        "  of which on a reused connection",
        follows.filter((s) => !s.fresh).length,
        follows
          .filter((s) => !s.fresh)
          .map((s) => s.headersMs)
          .filter(Number.isFinite),
      ),
      latencyRow(
        "  of which on a new connection",
        follows.filter((s) => s.fresh).length,
        follows
          .filter((s) => s.fresh)
          .map((s) => s.headersMs)
          .filter(Number.isFinite),
      ),
    ],
  );
  const ms = (ns) => fixed(ns / 1e6, 0);
  console.log(
    `   live: emitted after the stream's response headers arrived; catch-up: emitted before (sent from the run's backlog or the store).\n` +
      `   ${follows.length - liveFollowers.length} of ${follows.length} follower streams got no event live. ` +
      `Event-loop delay of this process during the serve load: p50 ${ms(loopDelay.percentile(50))}, ` +
      `p99 ${ms(loopDelay.percentile(99))}, max ${ms(loopDelay.max)} ms.`,
  );

  // 3
  console.log(`\n3. Memory of this process (sampled every ${SAMPLE_MS} ms; the model server is another process; a full GC before each phase)`);
  printTable(
    ["phase", "RSS MB", "peak RSS MB", "peak − baseline MB", "peak heapUsed MB", "samples RSS / heap"],
    [
      ["at start", mb(startRss), "-", "-", "-", "-"],
      ["baseline, after warm-up, before load", mb(baselineRss), "-", "-", mb(baselineHeap), "-"],
      [
        `runtime serve load`,
        "-",
        mb(servedPeak.rss),
        mb(servedPeak.rss - baselineRss),
        mb(servedPeak.heapUsed),
        `${servedPeak.rssSamples} / ${servedPeak.heapSamples}`,
      ],
      [
        `runTeam load (after the serve load)`,
        "-",
        mb(libraryPeak.rss),
        mb(libraryPeak.rss - baselineRss),
        mb(libraryPeak.heapUsed),
        `${libraryPeak.rssSamples} / ${libraryPeak.heapSamples}`,
      ],
    ],
  );

  console.log(`\n${loadLine()}`);
  console.log(`serve-load finished in ${fixed((performance.now() - started) / 1000, 1)} s`);
  if (served.results.some((r) => !r.ok) || library.results.some((r) => !r.ok)) process.exitCode = 1;
} finally {
  for (const req of [...active]) req.destroy();
  await runtime?.close();
  agent.destroy();
  chat.stop();
  await rssWorker.terminate();
  rmSync(dir, { recursive: true, force: true });
}
