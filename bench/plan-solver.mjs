#!/usr/bin/env node
/**
 * Benchmark: speed-up of `plan_solver` with its concurrency.
 *
 * A planner splits the request into N tasks; every solver reply is delayed by
 * D ms at an OpenAI-compatible server (bench/lib/solver-server.mjs, its own
 * process on 127.0.0.1, as a model's server is never in the runtime's
 * process), reached through the real `openai` client. For each concurrency c the solver
 * phase (first solver start → last solver finish) is timed and compared with
 * the ideal ceil(N / c) × D. Each level runs --runs times (the median counts),
 * after --warm runs at the highest level (module loading, connections, and
 * the JIT: a single run leaves the engine's code cold and the figure at 16
 * solvers moved by ±10 % from one run to the next).
 *
 * The aim (issue 16): a speed-up of at least 14× at 16 solvers with 200 ms replies.
 *
 *   npm run build && node bench/plan-solver.mjs [--tasks 16] [--delay 200] [--levels 1,2,4,8,16]
 *     [--runs 5] [--warm 5] [--no-trace]
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { loadTeam, runTeam } from "../dist/index.js";
import { startServerChild } from "./lib/bench-team.mjs";
import { median } from "./lib/stats.mjs";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "16" },
    delay: { type: "string", default: "200" },
    levels: { type: "string", default: "1,2,4,8,16" },
    runs: { type: "string", default: "5" },
    warm: { type: "string", default: "5" },
    "no-trace": { type: "boolean", default: false },
  },
});
const TASKS = Number(values.tasks);
const DELAY = Number(values.delay);
const LEVELS = values.levels.split(",").map(Number);
const TRACE = !values["no-trace"];
const RUNS = Number(values.runs);
const WARM = Number(values.warm);

function teamYaml(url, concurrency) {
  return `version: 1
name: bench-plan-solver
entry: pipeline
models:
  default: { provider: openai, model: bench-model, base_url: "${url}", api_key: bench-key, max_retries: 0 }
agents:
  pipeline: { kind: plan_solver, planner: planner, solver: solver, aggregator: aggregator, concurrency: ${concurrency} }
  planner: { kind: react, prompt: "ROLE:planner" }
  solver: { kind: react, prompt: "ROLE:solver" }
  aggregator: { kind: react, prompt: "ROLE:aggregator" }
`;
}

async function measure(url, dir, concurrency) {
  const file = join(dir, `team-c${concurrency}.yaml`);
  writeFileSync(file, teamYaml(url, concurrency));
  const team = await loadTeam(file);
  const marks = [];
  const started = performance.now();
  const run = runTeam(team, {
    input: `Do ${TASKS} independent things.`,
    traceDir: join(dir, "traces"),
    trace: TRACE,
    sinks: [(e) => e.agent_id === "solver" && (e.type === "agent.started" || e.type === "agent.finished") && marks.push(performance.now())],
  });
  const result = await run.result;
  const total = performance.now() - started;
  if (result.result_type !== "answer") throw new Error(`run failed at concurrency ${concurrency}: ${result.error}`);
  return { solver: Math.max(...marks) - Math.min(...marks), total };
}

/** The floor: the same solver requests sent straight through the `openai` client, `concurrency` at a time. */
async function clientFloor(url, concurrency) {
  const client = new OpenAI({ baseURL: url, apiKey: "bench-key", maxRetries: 0 });
  const system = { role: "system", content: "ROLE:solver" };
  const started = performance.now();
  for (let done = 0; done < TASKS; done += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, TASKS - done) }, (_, i) =>
      client.chat.completions.create({ model: "bench-model", messages: [{ role: "user", content: `Your task is task ${done + i + 1}` }, system] }),
    );
    await Promise.all(batch);
  }
  return performance.now() - started;
}

const server = await startServerChild("bench/lib/solver-server.mjs", { BENCH_TASKS: String(TASKS), BENCH_DELAY_MS: String(DELAY) });
const url = server.url;
const dir = mkdtempSync(join(tmpdir(), "bench-plan-solver-"));
try {
  for (let i = 0; i < WARM; i++) await measure(url, dir, Math.max(...LEVELS));
  console.log(
    `plan_solver: ${TASKS} tasks, solver replies delayed ${DELAY} ms, trace store ${TRACE ? "on" : "off"}, median of ${RUNS} runs per level after ${WARM} to warm up\n`,
  );
  console.log("concurrency  solver phase   ideal    speed-up  ideal speed-up  ratio to ideal   whole run   client alone");
  let baseline;
  let last;
  for (const c of LEVELS) {
    const runs = [];
    const floors = [];
    for (let i = 0; i < RUNS; i++) {
      runs.push(await measure(url, dir, c));
      floors.push(await clientFloor(url, c));
    }
    const solver = median(runs.map((r) => r.solver));
    const total = median(runs.map((r) => r.total));
    const floor = median(floors);
    const ideal = Math.ceil(TASKS / c) * DELAY;
    baseline ??= c === 1 ? solver : TASKS * DELAY;
    const speedup = baseline / solver;
    last = { c, speedup };
    const idealSpeedup = (TASKS * DELAY) / ideal;
    console.log(
      [
        String(c).padStart(11),
        `${solver.toFixed(0)} ms`.padStart(13),
        `${ideal} ms`.padStart(8),
        `${speedup.toFixed(2)}×`.padStart(10),
        `${idealSpeedup.toFixed(2)}×`.padStart(15),
        `${(ideal / solver).toFixed(2)}`.padStart(15),
        `${total.toFixed(0)} ms`.padStart(11),
        `${floor.toFixed(0)} ms`.padStart(14),
      ].join(" "),
    );
  }
  if (last && last.c === 16 && TASKS === 16) {
    console.log(`\nspeed-up at 16 solvers, ${DELAY} ms replies: ${last.speedup.toFixed(2)}× (aim ≥ 14×: ${last.speedup >= 14 ? "met" : "NOT met"})`);
  }
  console.log("\nratio to ideal = ideal solver-phase time / measured (1.00 is perfect; overhead lowers it)");
  console.log("client alone = the same requests sent straight through the openai client, in batches of the concurrency: the floor");
} finally {
  server.stop();
  rmSync(dir, { recursive: true, force: true });
}
