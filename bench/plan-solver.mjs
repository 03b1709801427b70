#!/usr/bin/env node
/**
 * Benchmark: speed-up of `plan_solver` with its concurrency.
 *
 * A planner splits the request into N tasks; every solver reply is delayed by
 * D ms at an OpenAI-compatible server started here (127.0.0.1, random port),
 * reached through the real `openai` client. For each concurrency c the solver
 * phase (first solver start → last solver finish) is timed and compared with
 * the ideal ceil(N / c) × D.
 *
 * The aim (issue 16): a speed-up of at least 14× at 16 solvers with 200 ms replies.
 *
 *   npm run build && node bench/plan-solver.mjs [--tasks 16] [--delay 200] [--levels 1,2,4,8,16] [--no-trace]
 */
import { createServer } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { loadTeam, runTeam } from "../dist/index.js";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "16" },
    delay: { type: "string", default: "200" },
    levels: { type: "string", default: "1,2,4,8,16" },
    "no-trace": { type: "boolean", default: false },
  },
});
const TASKS = Number(values.tasks);
const DELAY = Number(values.delay);
const LEVELS = values.levels.split(",").map(Number);
const TRACE = !values["no-trace"];

/** The react protocol's ANSWER reply. */
const answer = (text) =>
  JSON.stringify({ observe: "", thought: "", action: { result: { action_type: "ANSWER", output: { answer: text } } } });

/** A minimal Chat Completions endpoint: the role comes from the system prompt (`ROLE:solver`). */
function startServer() {
  const server = createServer((req, res) => {
    let text = "";
    req.on("data", (chunk) => (text += chunk));
    req.on("end", () => {
      const body = JSON.parse(text || "{}");
      const system = body.messages?.find((m) => m.role === "system")?.content ?? "";
      const user = body.messages?.find((m) => m.role === "user")?.content ?? "";
      const role = /^ROLE:(\w+)/.exec(system)?.[1];
      let content;
      let delay = 0;
      if (role === "planner") content = answer({ steps: Array.from({ length: TASKS }, (_, i) => `task ${i + 1}`) });
      else if (role === "solver") {
        content = answer(`solved ${/Your task is task (\d+)/.exec(user)?.[1] ?? "?"}`);
        delay = DELAY;
      } else content = answer("aggregated");
      setTimeout(() => {
        res.setHeader("content-type", "application/json");
        res.end(
          JSON.stringify({
            id: "chatcmpl-bench",
            object: "chat.completion",
            created: 0,
            model: body.model,
            choices: [{ index: 0, message: { role: "assistant", content }, finish_reason: "stop" }],
            usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
          }),
        );
      }, delay);
    });
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

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

const server = await startServer();
const url = `http://127.0.0.1:${server.address().port}/v1`;
const dir = mkdtempSync(join(tmpdir(), "bench-plan-solver-"));
try {
  await measure(url, dir, Math.max(...LEVELS)); // warm-up: module loading, connections
  console.log(`plan_solver: ${TASKS} tasks, solver replies delayed ${DELAY} ms, trace store ${TRACE ? "on" : "off"}\n`);
  console.log("concurrency  solver phase   ideal    speed-up  ideal speed-up  ratio to ideal   whole run   client alone");
  let baseline;
  let last;
  for (const c of LEVELS) {
    const { solver, total } = await measure(url, dir, c);
    const floor = await clientFloor(url, c);
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
  server.closeAllConnections();
  server.close();
  rmSync(dir, { recursive: true, force: true });
}
