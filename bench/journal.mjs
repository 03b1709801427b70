#!/usr/bin/env node
/**
 * Benchmark: what the journal (docs/durable-runs.md) costs, and what a resume
 * costs. The react calculator loop of bench/react-loop.mjs against the chat
 * server child, run through runTeam with the trace on and the journal on,
 * beside the same run with the journal off (trace still on) and with the
 * trace off, tasks interleaved so the machine's load falls on all alike.
 *
 *   npm run build && node bench/journal.mjs [--tasks 60] [--steps 10]
 *
 * Prints CPU ms per task (median), the journal's share, and the time to
 * resume (replay) a finished 10-step run's journal against running it.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadTeam, runTeam } from "../dist/index.js";
import { replayRun } from "../dist/engine/resume.js";
import { benchTeamYaml, loadLine, startChatServer } from "./lib/bench-team.mjs";
import { fixed, measure, median, printTable } from "./lib/stats.mjs";

const { values } = parseArgs({ options: { tasks: { type: "string", default: "60" }, steps: { type: "string", default: "10" } } });
const TASKS = Number(values.tasks);
const STEPS = Number(values.steps);
const AIM = 1.1;

const server = await startChatServer(0);
const dir = mkdtempSync(join(tmpdir(), "bench-journal-"));
try {
  const file = join(dir, "team.yaml");
  writeFileSync(file, benchTeamYaml(server.url, "bench-journal"));
  const team = await loadTeam(file);
  const traceDir = join(dir, "traces");
  const input = (tag) => `Compute the areas of circles of radius 1, 2, 3... steps=${STEPS} tag=${tag}`;
  const variants = [
    { name: "trace off (no journal)", options: { trace: false } },
    { name: "trace on, journal off", options: { journal: false } },
    { name: "trace on, journal on", options: {} },
  ];
  const cpu = variants.map(() => []);
  const ids = [];
  const task = async (v, i) => {
    const run = runTeam(team, { input: input(`${v}-${i}`), traceDir, ...variants[v].options });
    const result = await run.result;
    if (result.result_type !== "answer") throw new Error(`task failed: ${result.error}`);
    return run.task_id;
  };
  // Warm-up: modules, JIT, connections, the trace database.
  for (let v = 0; v < variants.length; v++) for (let i = 0; i < 5; i++) await task(v, `warm${i}`);
  for (let i = 0; i < TASKS; i++) {
    for (let v = 0; v < variants.length; v++) {
      const { cpu: ms, value } = await measure(() => task(v, i));
      cpu[v].push(ms);
      if (v === 2) ids.push(value);
    }
  }
  const medians = cpu.map(median);
  console.log(`journal cost: ${TASKS} interleaved ${STEPS}-step tasks per variant · ${loadLine()}`);
  printTable(
    ["variant", "CPU ms/task (median)", "vs journal off"],
    variants.map((v, i) => [v.name, fixed(medians[i]), fixed(medians[i] / medians[1])]),
  );
  const ratio = medians[2] / medians[1];
  console.log(`journal on / journal off: ${fixed(ratio)}× CPU per task (aim: at most ${AIM}×) ${ratio <= AIM ? "ok" : "OVER"}`);

  // Going over a stored run: every reply and tool result from its journal, nothing asked.
  const replay = [];
  const live = [];
  for (let i = 0; i < Math.min(20, ids.length); i++) {
    const scratch = mkdtempSync(join(dir, "replay-"));
    replay.push((await measure(async () => (await replayRun(team, { taskId: ids[i], from: traceDir, traceDir: scratch }).result).result_type)).wall);
    live.push((await measure(() => task(2, `live${i}`))).wall);
    rmSync(scratch, { recursive: true, force: true });
  }
  console.log(`replay of a stored ${STEPS}-step run: ${fixed(median(replay))} ms wall (running it: ${fixed(median(live))} ms)`);
} finally {
  server.stop();
  rmSync(dir, { recursive: true, force: true });
}
