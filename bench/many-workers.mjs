#!/usr/bin/env node
/**
 * Benchmark: many `runtime worker` processes on one PostgreSQL
 * (docs/scale-out.md#100-workers-on-one-postgresql), with PostgreSQL's default
 * max_connections (100), then the same under a storm: a tenth of the workers
 * SIGKILLed every few seconds (and replaced), and `pg_ctl restart -m fast`
 * half-way through.
 *
 * Each run is a react loop against the chat server (bench/lib/chat-server.mjs,
 * its own process, model latency per reply) whose tool `record` appends the
 * call's tag (`r<i>-<k>`) to a file unless it is there (`effect: idempotent`,
 * or `--effect write`: a call cut off pauses its run for a person), and each
 * execution to another: side effects to count. Runs are queued
 * directly (as `runtime serve --store` does). Printed:
 *
 *   runs      each run done once, answered once (its events hold one answer)
 *   effects   each tool call's line once, none missing
 *   herd      the queue's fetches (pg-boss's fetch statement, counted by
 *             pg_stat_statements) per run queued, while the workers are
 *             idle and runs come one by one, beyond the workers' own polls
 *   conns     the peak of SELECT count(*) FROM pg_stat_activity (sampled
 *             every 100 ms) against max_connections
 *   rate      runs/s of the whole batch, and the machine's CPU busy share
 *
 *   npm run build && node bench/many-workers.mjs [--workers 100] [--concurrency 2] [--runs 2000]
 *     [--latency 300] [--steps 3] [--lease-ms 10000] [--storm] [--kill-every-ms 3000] [--effect idempotent|write]
 *     [--pool-size 2] [--poll-ms 1000] [--direct] [--max-connections 100]
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pg from "pg";
import { createStore } from "../dist/store/create.js";
import { RunQueue } from "../dist/queue/run-queue.js";
import { loadLine, startChatServer } from "./lib/bench-team.mjs";
import { startPgBouncer } from "./lib/pgbouncer.mjs";
import { startPostgres } from "../scripts/lib/postgres.mjs";
import { fixed } from "./lib/stats.mjs";

const { values } = parseArgs({
  options: {
    workers: { type: "string", default: "100" },
    concurrency: { type: "string", default: "2" },
    runs: { type: "string", default: "2000" },
    latency: { type: "string", default: "300" },
    steps: { type: "string", default: "3" },
    "lease-ms": { type: "string", default: "10000" },
    trickle: { type: "string", default: "40" },
    storm: { type: "boolean", default: false },
    "kill-every-ms": { type: "string", default: "3000" },
    "kill-share": { type: "string", default: "0.1" },
    "pool-size": { type: "string", default: "2" },
    "poll-ms": { type: "string", default: "1000" },
    direct: { type: "boolean", default: false },
    effect: { type: "string", default: "idempotent" },
    "max-connections": { type: "string", default: "100" },
  },
});
const WORKERS = Number(values.workers);
const CONCURRENCY = Number(values.concurrency);
const RUNS = Number(values.runs);
const STEPS = Number(values.steps);
const LEASE_MS = Number(values["lease-ms"]);
const TRICKLE = Number(values.trickle);
const KILL_EVERY_MS = Number(values["kill-every-ms"]);
const KILL_SHARE = Number(values["kill-share"]);
const BIN = fileURLToPath(new URL("../bin/runtime.js", import.meta.url));

const chat = await startChatServer(Number(values.latency));
// PostgreSQL's default max_connections (unless --max-connections), and the statement counts the herd is read from.
const postgres = await startPostgres({ settings: { max_connections: values["max-connections"], shared_preload_libraries: "pg_stat_statements" } });
const dir = mkdtempSync(join(tmpdir(), "bench-many-"));
const effects = join(dir, "effects.log");
const calls = join(dir, "calls.log");
const teamFile = join(dir, "team.yaml");
writeFileSync(
  teamFile,
  `version: 1
name: bench-many
entry: solver
models:
  bench: { provider: openai, model: bench-model, base_url: "${chat.url}", api_key: bench-key }
tools:
  record:
    command: [sh, -c, 'line=$(cat); echo "$line" >> "$CALLS"; grep -qxF "$line" "$EFFECTS" 2>/dev/null || echo "$line" >> "$EFFECTS"; echo "{\\"recorded\\":true}"']
    effect: ${values.effect}
    description: Record that a step was done.
    parameters: { type: object, properties: { tag: { type: string } }, required: [tag] }
    env: { EFFECTS: "${effects}", CALLS: "${calls}" }
agents:
  solver:
    kind: react
    model: bench
    max_iteration: 20
    tools: [record]
`,
);

const url = await postgres.createDatabase("many");
// The workers through PgBouncer (transaction mode, 40 server connections), polling: no LISTEN connection each.
// --direct: straight to PostgreSQL, listening (the default worker), as far as max_connections allows.
const bouncer = values.direct ? undefined : await startPgBouncer(postgres.port, { poolSize: 40 });
const workerUrl = bouncer ? bouncer.url(new URL(url).pathname.slice(1)) : url;
const workerFlags = ["--pool-size", values["pool-size"], "--poll-ms", values["poll-ms"], ...(bouncer ? ["--no-listen"] : [])];
// The bench's own connections (one pool: it reconnects after the restart).
const admin = new pg.Pool({ connectionString: url, max: 2 });
admin.on("error", () => {});
await admin.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
const store = await createStore(url, { maxConnections: 4 });
const queue = await RunQueue.open(store, ["bench-many"]);
const input = (i) => `steps=${STEPS} tool=record tag=r${i}`;

console.log(
  `${WORKERS} workers × concurrency ${CONCURRENCY}, ${RUNS} runs of ${STEPS - 1} tool calls + an answer, model latency ${values.latency} ms, lease ${LEASE_MS} ms, ${bouncer ? "through PgBouncer (transaction mode, 40 server connections), polling" : "direct, listening"}, pool ${values["pool-size"]}${values.storm ? `; storm: ${Math.round(KILL_SHARE * 100)}% of workers SIGKILLed every ${KILL_EVERY_MS} ms, PostgreSQL restarted half-way` : ""}; ${loadLine()}\n`,
);

/** Live worker processes; killed when the bench ends, however it ends. */
const workers = new Set();
process.once("exit", () => {
  for (const child of workers) child.kill("SIGKILL");
});
process.once("SIGINT", () => process.exit(130));
let killed = 0;
function startWorker() {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [BIN, "worker", teamFile, "--store", workerUrl, "--concurrency", String(CONCURRENCY), "--lease-ms", String(LEASE_MS), ...workerFlags, "--quiet"],
      {
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d) => {
      err += d;
      if (err.includes("takes runs of")) resolve(child);
    });
    child.once("exit", (code, signal) => {
      workers.delete(child);
      if (signal !== "SIGKILL" && signal !== "SIGTERM") {
        console.error(`a worker exited (${code ?? signal}): ${err.slice(-2000)}`);
        reject(new Error(`worker exited (${code})`));
      }
    });
    child.log = () => err;
    workers.add(child);
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const fetches = async () =>
  Number(
    (await admin.query(`SELECT COALESCE(sum(calls), 0)::bigint AS n FROM pg_stat_statements WHERE query LIKE '%WITH next as%FOR UPDATE SKIP LOCKED%'`)).rows[0]
      .n,
  );
const connections = async () => Number((await admin.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend'")).rows[0].n);
/** CPU ms (user + system, with reaped children: a worker's tool processes, PostgreSQL's ended backends) of the workers, PostgreSQL and PgBouncer. */
function cpuByPart() {
  const parts = { workers: 0, postgres: 0, pgbouncer: 0 };
  const pids = new Set([...workers].map((w) => w.pid));
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let stat;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    } catch {
      continue;
    }
    const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
    const f = stat
      .slice(stat.lastIndexOf(")") + 2)
      .split(" ")
      .map(Number);
    const ms = ((f[11] + f[12] + f[13] + f[14]) * 1000) / 100;
    if (pids.has(Number(pid))) parts.workers += ms;
    else if (comm === "postgres") parts.postgres += ms;
    else if (comm === "pgbouncer") parts.pgbouncer += ms;
  }
  return parts;
}

/** Busy and total jiffies of the machine (/proc/stat). */
function cpuTicks() {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1).map(Number);
  const idle = f[3] + f[4];
  const total = f.reduce((a, b) => a + b, 0);
  return { busy: total - idle, total };
}

try {
  const t0 = performance.now();
  for (let i = 0; i < WORKERS; i += 10) await Promise.all(Array.from({ length: Math.min(10, WORKERS - i) }, startWorker));
  console.log(`${WORKERS} workers started in ${fixed((performance.now() - t0) / 1000, 1)} s; connections now ${await connections()}`);
  await sleep(2000);

  // The herd: idle workers, runs queued one at a time (4/s). Listening, every idle worker fetches on each
  // run's notification; polling, the fleet's fetches per second stay what they are when idle.
  const idle0 = await fetches();
  const idleStart = performance.now();
  await sleep(5000);
  const idleRate = ((await fetches()) - idle0) / ((performance.now() - idleStart) / 1000);
  const trickleIds = Array.from({ length: TRICKLE }, () => randomUUID());
  const f0 = await fetches();
  const tt = performance.now();
  for (const [i, task_id] of trickleIds.entries()) {
    await queue.enqueue({ task_id, team: "bench-many", input: input(`t${i}`) });
    await sleep(250);
  }
  await waitDone(trickleIds);
  const trickleFetches = (await fetches()) - f0;
  const trickleRate = trickleFetches / ((performance.now() - tt) / 1000);
  console.log(
    `herd: ${fixed(trickleFetches / TRICKLE, 1)} fetches per run queued (${TRICKLE} runs, one every 250 ms, to idle workers): ${fixed(trickleRate, 0)} fetches/s, against ${fixed(idleRate, 0)}/s with no run coming`,
  );

  // The batch: every run queued at once, the workers take them as they can.
  const ids = Array.from({ length: RUNS }, () => randomUUID());
  const b0 = await fetches();
  let peak = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, await connections().catch(() => 0));
      await sleep(100);
    }
  })();
  const cpu0 = cpuTicks();
  const parts0 = cpuByPart();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < RUNS) {
        const i = next++;
        await queue.enqueue({ task_id: ids[i], team: "bench-many", input: input(i) });
      }
    }),
  );
  const storm = values.storm ? startStorm(ids) : undefined;
  await waitDone(ids, storm);
  const seconds = (performance.now() - started) / 1000;
  const cpu1 = cpuTicks();
  const parts1 = cpuByPart();
  await storm?.stop();
  sampling = false;
  await sampler;
  const batchFetches = (await fetches()) - b0;
  const busy = (cpu1.busy - cpu0.busy) / (cpu1.total - cpu0.total);
  console.log(`batch: ${RUNS} runs in ${fixed(seconds, 1)} s: ${fixed(RUNS / seconds, 1)} runs/s; CPU ${fixed(busy * 100, 0)}% busy on 2 cores`);
  const per = (k) => (parts1[k] - parts0[k]) / RUNS;
  const ours = ((per("workers") + per("postgres") + per("pgbouncer")) * RUNS) / 1000 / seconds;
  // In a storm, killed workers and the restarted PostgreSQL take their CPU counts with them (the figure came out negative).
  if (!storm)
    console.log(
      `CPU per run: workers ${fixed(per("workers"), 1)} ms (with their tools' processes), PostgreSQL ${fixed(per("postgres"), 1)} ms, PgBouncer ${fixed(per("pgbouncer"), 1)} ms: ${fixed(ours, 2)} of the 2 cores`,
    );
  console.log(`fetches: ${fixed(batchFetches / RUNS, 2)} per run in the batch`);
  console.log(`connections: peak ${peak} of max_connections ${values["max-connections"]}`);
  if (storm) console.log(`storm: ${killed} workers SIGKILLed and replaced, PostgreSQL restarted once`);
  await verify([...trickleIds.map((id, i) => [id, `t${i}`]), ...ids.map((id, i) => [id, String(i)])]);
} finally {
  for (const child of workers) child.kill("SIGKILL");
  await admin.end().catch(() => {});
  await queue.close();
  await store.close();
  bouncer?.stop();
  postgres.stop();
  chat.stop();
}

/** Wait until every run of `ids` is done (its request's state). */
async function waitDone(ids, storm) {
  for (;;) {
    const { rows } = await admin
      .query(`SELECT count(*)::int AS n FROM runtime.run_requests WHERE task_id = ANY($1) AND state = 'done'`, [ids])
      .catch(() => ({ rows: [{ n: -1 }] }));
    storm?.progress(rows[0].n / ids.length);
    if (rows[0].n === ids.length) return;
    await sleep(200);
  }
}

/** Kill a share of the workers every few seconds, start as many again, and restart PostgreSQL once half the runs are done. */
function startStorm() {
  let restarted = false;
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      await sleep(KILL_EVERY_MS);
      if (stopped) break;
      const victims = [...workers].sort(() => Math.random() - 0.5).slice(0, Math.max(1, Math.round(WORKERS * KILL_SHARE)));
      for (const v of victims) v.kill("SIGKILL");
      killed += victims.length;
      // Replacements join when they are up: the storm's pace does not wait on their start.
      for (const _ of victims) startWorker().catch(() => {});
    }
  })();
  return {
    progress(share) {
      if (restarted || share < 0.5) return;
      restarted = true;
      console.log("storm: pg_ctl restart -m fast");
      void postgres.restart();
    },
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/** Each run once, answered once; each tool call's side effect once. */
async function verify(runs) {
  // The admin connection died with the restart: a fresh one.
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const ids = runs.map(([id]) => id);
    const { rows } = await client.query(
      `SELECT r.task_id, r.state, r.result_type, r.attempts,
              (SELECT count(*)::int FROM runtime.events e WHERE e.task_id = r.task_id AND e.type = 'run.finished' AND e.json::jsonb->>'result_type' = 'answer') AS answers,
              (SELECT count(*)::int FROM runtime.events e WHERE e.task_id = r.task_id AND e.type = 'run.resumed') AS resumes,
              (SELECT e.json::jsonb->>'error_code' || ': ' || (e.json::jsonb->>'error') FROM runtime.events e
                WHERE e.task_id = r.task_id AND e.type = 'run.finished' ORDER BY e.seq DESC LIMIT 1) AS error
         FROM runtime.run_requests r WHERE r.task_id = ANY($1)`,
      [ids],
    );
    const by = (f) => rows.reduce((m, r) => m.set(f(r), (m.get(f(r)) ?? 0) + 1), new Map());
    console.log(`runs: ${rows.length} requests; states ${JSON.stringify(Object.fromEntries(by((r) => `${r.state} ${r.result_type}`)))}`);
    console.log(
      `      attempts ${JSON.stringify(Object.fromEntries(by((r) => r.attempts)))}; answers per run ${JSON.stringify(Object.fromEntries(by((r) => r.answers)))}; resumed runs ${rows.filter((r) => r.resumes > 0).length}`,
    );
    // Why a run did not answer, read before the bench's PostgreSQL is gone.
    for (const r of rows.filter((r) => r.result_type !== "answer").slice(0, 5))
      console.log(`      run ${r.task_id}: ${r.state} ${r.result_type}, claimed ${r.attempts} time(s); ${r.error ?? "no run.finished"}`);
    const lines = existsSync(effects) ? readFileSync(effects, "utf8").split("\n").filter(Boolean) : [];
    const seen = new Map();
    for (const l of lines) {
      const tag = JSON.parse(l).tag;
      seen.set(tag, (seen.get(tag) ?? 0) + 1);
    }
    const expected = runs.flatMap(([, i]) => Array.from({ length: STEPS - 1 }, (_, k) => `r${i}-${k + 1}`));
    const missing = expected.filter((t) => !seen.has(t));
    const twice = [...seen].filter(([, n]) => n > 1);
    console.log(
      `effects: ${lines.length} lines for ${expected.length} calls; ${missing.length} missing, ${twice.length} twice${twice.length ? ` (${twice.slice(0, 5).map(([t]) => t)})` : ""}`,
    );
    const ran = existsSync(calls) ? readFileSync(calls, "utf8").split("\n").filter(Boolean).length : 0;
    console.log(`tool bodies run: ${ran} (${ran - lines.length} again: cut off by a kill or a lost lease, then resumed)`);
    const ok =
      rows.length === runs.length &&
      rows.every((r) => r.state === "done" && r.result_type === "answer" && r.answers === 1) &&
      missing.length === 0 &&
      twice.length === 0;
    console.log(ok ? "\nOK: every run done once with one answer, every side effect once" : "\nFAILED: see above");
    if (!ok) process.exitCode = 1;
  } finally {
    await client.end();
  }
}
