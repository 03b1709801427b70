// Plan Tool throughput: update_task_status calls per second on one plan, in
// memory (SQLite :memory:) and durable (a WAL file under a temp trace dir).
// The aim (issue 16): at least 50,000 updates/s in memory and 20,000 durable.
// Each figure is the median of ROUNDS runs after one to warm up (a first run
// leaves the JIT cold: one run alone gave ~30 % less in memory).
// Run after `npm run build`:  node bench/plan-tool.mjs [tasks] [rounds]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openPlanFile } from "../dist/store/sqlite/store.js";
import { median } from "./lib/stats.mjs";

const TASKS = Number(process.argv[2] ?? 5000);
const ROUNDS = Number(process.argv[3] ?? 3);

function structure(n) {
  return {
    name: "bench",
    steps: [{ step_id: "s1", name: "All", tasks: Array.from({ length: n }, (_, i) => ({ task_id: `t${i + 1}`, name: `Task ${i + 1}`, assignee: "worker" })) }],
  };
}

/** 2 × TASKS updates (ready → inprogress → completed), awaited one by one, then all at once: updates/s of each, median of ROUNDS after a warm-up. */
async function measure(file) {
  const results = {};
  for (const mode of ["sequential", "concurrent"]) {
    const rates = [];
    for (let round = 0; round <= ROUNDS; round++) {
      const rate = await once(file, mode, `bench-${mode}-${round}`);
      if (round > 0) rates.push(rate);
    }
    results[mode] = { median: median(rates), low: Math.min(...rates), high: Math.max(...rates) };
  }
  return results;
}

/** One run of 2 × TASKS updates on a new plan: updates per second. */
async function once(file, mode, planId) {
  const tool = openPlanFile(file);
  await tool.create_plan_from_structure(planId, structure(TASKS));
  const started = performance.now();
  if (mode === "sequential") {
    for (let i = 1; i <= TASKS; i++) {
      await tool.update_task_status(planId, `t${i}`, "inprogress");
      await tool.update_task_status(planId, `t${i}`, "completed", `r${i}`);
    }
  } else {
    const calls = [];
    for (let i = 1; i <= TASKS; i++) {
      calls.push(tool.update_task_status(planId, `t${i}`, "inprogress"));
      calls.push(tool.update_task_status(planId, `t${i}`, "completed", `r${i}`));
    }
    await Promise.all(calls);
  }
  const seconds = (performance.now() - started) / 1000;
  if ((await tool.get_plan_status(planId)) !== "completed") throw new Error(`${mode}: the plan did not complete`);
  await tool.close();
  return (2 * TASKS) / seconds;
}

const dir = mkdtempSync(join(tmpdir(), "plan-bench-"));
try {
  const memory = await measure(":memory:");
  const durable = await measure(join(dir, "plans.db"));
  const fmt = (n) => Math.round(n).toLocaleString("en-US").padStart(9);
  const range = (r) => `(${Math.round(r.low).toLocaleString("en-US")}-${Math.round(r.high).toLocaleString("en-US")})`;
  console.log(`Plan Tool: update_task_status on one plan of ${TASKS} tasks (${2 * TASKS} updates per run), median of ${ROUNDS} runs after one to warm up`);
  for (const mode of ["sequential", "concurrent"]) {
    console.log(
      `  ${mode.padEnd(10)}  in memory ${fmt(memory[mode].median)} updates/s ${range(memory[mode]).padEnd(15)}  durable (WAL file) ${fmt(durable[mode].median)} updates/s ${range(durable[mode]).padEnd(15)}  memory/durable ${(memory[mode].median / durable[mode].median).toFixed(2)}x`,
    );
  }
  console.log("  (concurrent: the updates issued together share transactions, up to 256 a commit: docs/plan-tool.md#concurrency-and-durability)");
  const met = (value, aim) => `${Math.round(value).toLocaleString("en-US")} (aim ≥ ${aim.toLocaleString("en-US")}: ${value >= aim ? "met" : "NOT met"})`;
  console.log(
    `  best: in memory ${met(Math.max(memory.sequential.median, memory.concurrent.median), 50_000)}; durable ${met(Math.max(durable.sequential.median, durable.concurrent.median), 20_000)}`,
  );
  console.log(`  one at a time: in memory ${met(memory.sequential.median, 50_000)}; durable ${met(durable.sequential.median, 20_000)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
