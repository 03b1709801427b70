#!/usr/bin/env node
/**
 * Benchmark: throughput of runs on PostgreSQL with 1, 2 and 4 worker
 * processes, beside the embedded default (runs in this process, SQLite),
 * measured in the same run, and where a queued run's time goes.
 *
 * Each run is the benches' 10-step calculator loop (bench/lib/bench-team.mjs)
 * against the chat server (its own process) with a model latency per reply.
 * The queued runs are put in the queue directly (as `runtime serve --store`
 * does) and taken by `runtime worker` processes; a batch ends when every
 * run's request is done. The latency split of a queued run:
 *
 *   queue wait  request created → claimed by a worker
 *   model       the sum of its model calls (llm.response duration_ms)
 *   tools       the sum of its tool calls (tool.finished duration_ms)
 *   engine+store the rest of its time on the worker: orchestration and the
 *               awaited commits to PostgreSQL
 *
 *   npm run build && node bench/scale-out.mjs [--runs 48] [--concurrency 8] [--latency 100] [--steps 10]
 */
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pg from "pg";
import { loadTeam } from "../dist/config/load.js";
import { runTeam } from "../dist/engine/run-team.js";
import { createStore } from "../dist/store/create.js";
import { RunQueue } from "../dist/queue/run-queue.js";
import { benchTeamYaml, loadLine, startChatServer } from "./lib/bench-team.mjs";
import { startPostgres } from "../scripts/lib/postgres.mjs";
import { fixed, median, printTable } from "./lib/stats.mjs";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "48" },
    concurrency: { type: "string", default: "8" },
    latency: { type: "string", default: "100" },
    steps: { type: "string", default: "10" },
    workers: { type: "string", default: "1,2,4" },
  },
});
const RUNS = Number(values.runs);
const CONCURRENCY = Number(values.concurrency);
const LATENCY = Number(values.latency);
const STEPS = Number(values.steps);
const WORKERS = values.workers.split(",").map(Number);
const BIN = fileURLToPath(new URL("../bin/runtime.js", import.meta.url));

const chat = await startChatServer(LATENCY);
const postgres = await startPostgres();
const dir = mkdtempSync(join(tmpdir(), "bench-scale-"));
const teamFile = join(dir, "team.yaml");
writeFileSync(teamFile, benchTeamYaml(chat.url, "bench-scale"));
const team = await loadTeam(teamFile);
const input = (i) => `steps=${STEPS} tag=r${i}`;

console.log(`${RUNS} runs of a ${STEPS}-step tool loop, model latency ${LATENCY} ms per reply, ${CONCURRENCY} runs at once per process; ${loadLine()}\n`);

const rows = [];
try {
  // The embedded default: runs in this process, SQLite under a trace directory.
  {
    const traceDir = mkdtempSync(join(tmpdir(), "bench-scale-trace-"));
    const started = performance.now();
    const splits = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < RUNS) {
          const i = next++;
          const t0 = performance.now();
          const run = runTeam(team, { input: input(i), traceDir });
          let model = 0;
          let tools = 0;
          for await (const e of run.events) {
            if (e.type === "llm.response") model += e.duration_ms;
            if (e.type === "tool.finished") tools += e.duration_ms;
          }
          const result = await run.result;
          if (result.result_type !== "answer") throw new Error(`embedded run failed: ${result.error}`);
          splits.push({ wait: 0, total: performance.now() - t0, model, tools });
        }
      }),
    );
    rows.push(row("embedded (SQLite, in process)", RUNS / ((performance.now() - started) / 1000), splits));
  }

  for (const n of WORKERS) {
    const url = await postgres.createDatabase(`w${n}`);
    const store = await createStore(url);
    const queue = await RunQueue.open(store, [team.name]);
    const workers = await Promise.all(Array.from({ length: n }, () => startWorker(url)));
    const ids = Array.from({ length: RUNS }, () => randomUUID());
    const started = performance.now();
    await Promise.all(ids.map((task_id, i) => queue.enqueue({ task_id, team: team.name, input: input(i) })));
    for (;;) {
      const counts = await queue.counts();
      if (counts.done === RUNS) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const seconds = (performance.now() - started) / 1000;
    const splits = await splitsOf(url, store, ids);
    rows.push(row(`PostgreSQL, ${n} worker process${n > 1 ? "es" : ""}`, RUNS / seconds, splits));
    await Promise.all(workers.map(stopWorker));
    await queue.close();
    await store.close();
  }
} finally {
  postgres.stop();
  chat.stop();
}

const base = rows[0].rate;
printTable(
  ["", "runs/s", "× embedded", "queue wait p50", "run p50", "model p50", "tools p50", "engine+store p50"],
  rows.map((r) => [r.name, fixed(r.rate), fixed(r.rate / base), ms(r.wait), ms(r.total), ms(r.model), ms(r.tools), ms(r.rest)]),
);
console.log("\n(p50 per run, ms; a run's time is from its claim to its end on the worker, queue wait before that)");

function row(name, rate, splits) {
  return {
    name,
    rate,
    wait: median(splits.map((s) => s.wait)),
    total: median(splits.map((s) => s.total)),
    model: median(splits.map((s) => s.model)),
    tools: median(splits.map((s) => s.tools)),
    rest: median(splits.map((s) => s.total - s.model - s.tools)),
  };
}

function ms(n) {
  return `${fixed(n, 0)}`;
}

async function splitsOf(url, store, ids) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT task_id, EXTRACT(EPOCH FROM started_at - created_at) * 1000 AS wait, EXTRACT(EPOCH FROM finished_at - started_at) * 1000 AS total
         FROM runtime.run_requests WHERE task_id = ANY($1)`,
      [ids],
    );
    return Promise.all(
      rows.map(async (r) => {
        const events = await store.runs.eventsOfTask(r.task_id);
        const model = events.filter((e) => e.type === "llm.response").reduce((a, e) => a + e.duration_ms, 0);
        const tools = events.filter((e) => e.type === "tool.finished").reduce((a, e) => a + e.duration_ms, 0);
        return { wait: Number(r.wait), total: Number(r.total), model, tools };
      }),
    );
  } finally {
    await client.end();
  }
}

function startWorker(url) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "worker", teamFile, "--store", url, "--concurrency", String(CONCURRENCY), "--quiet"], {
      stdio: ["ignore", "ignore", "pipe"],
    });
    let err = "";
    child.stderr.setEncoding("utf8").on("data", (d) => {
      err += d;
      if (err.includes("takes runs of")) resolve(child);
    });
    child.once("exit", (code) => reject(new Error(`worker exited (${code}): ${err}`)));
  });
}

function stopWorker(child) {
  return new Promise((resolve) => {
    child.removeAllListeners("exit");
    child.once("exit", resolve);
    child.kill("SIGTERM");
  });
}
