#!/usr/bin/env node
/**
 * Benchmark: what the kind of id costs the trace store (docs/design/journal.md#ids).
 * The react calculator loop of bench/react-loop.mjs, 50 runs at once, trace
 * on, run with the runtime's ids (UUID v7, time-ordered: src/ids.ts) beside
 * the same runs with random ids (UUID v4, `crypto.randomUUID`), each variant
 * writing a trace store of its own, rounds interleaved.
 *
 * The store indexes events by (task_id, seq) and trace_id, the journal by
 * (task_id, key) and runs by task_id. Measured twice: on fresh stores, and
 * again once each store holds --grow more runs, since a random id's index
 * entry lands on any page of an index that grows with every run.
 *
 *   npm run build && node bench/trace-ids.mjs [--rounds 8] [--concurrency 50] [--grow 2000]
 *
 * Prints CPU ms per run (median of the rounds) for each variant and v7 ÷ v4.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { loadTeam, runTeam } from "../dist/index.js";
import { newId } from "../dist/ids.js";
import { benchTeamYaml, loadLine, startChatServer } from "./lib/bench-team.mjs";
import { fixed, measure, median, printTable } from "./lib/stats.mjs";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "8" },
    concurrency: { type: "string", default: "50" },
    grow: { type: "string", default: "2000" },
  },
});
const ROUNDS = Number(values.rounds);
const CONCURRENCY = Number(values.concurrency);
const GROW = Number(values.grow);

const server = await startChatServer(0);
const dir = mkdtempSync(join(tmpdir(), "bench-trace-ids-"));
try {
  const file = join(dir, "team.yaml");
  writeFileSync(file, benchTeamYaml(server.url, "bench-trace-ids"));
  const team = await loadTeam(file);
  const variants = [
    { name: "random ids (v4)", newId: randomUUID, traceDir: join(dir, "v4") },
    { name: "time-ordered ids (v7, the runtime's)", newId, traceDir: join(dir, "v7") },
  ];
  let n = 0;
  const run = async (variant) => {
    const result = await runTeam(team, { input: `steps=10 tag=${n++}`, traceDir: variant.traceDir, newId: variant.newId }).result;
    if (result.result_type !== "answer") throw new Error(`run failed: ${result.error}`);
  };
  const batch = (variant, size) => Promise.all(Array.from({ length: size }, () => run(variant)));
  const sizeMb = (variant) => statSync(join(variant.traceDir, "traces.db")).size / 2 ** 20;

  /** ROUNDS rounds of CONCURRENCY runs per variant, the order alternating: CPU ms per run. */
  const rounds = async () => {
    const cpu = variants.map(() => []);
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 ? [1, 0] : [0, 1];
      for (const v of order) cpu[v].push((await measure(() => batch(variants[v], CONCURRENCY))).cpu / CONCURRENCY);
    }
    return cpu.map(median);
  };
  const report = (title, medians) => {
    console.log(title);
    printTable(
      ["variant", "CPU ms/run (median)", "store MB"],
      variants.map((v, i) => [v.name, fixed(medians[i]), fixed(sizeMb(v), 1)]),
    );
    console.log(`   v7 ÷ v4: ${fixed(medians[1] / medians[0], 3)}`);
  };

  console.log(`trace-ids: 10-step runs, ${CONCURRENCY} at once, trace on, ${ROUNDS} rounds per variant · ${loadLine()}`);
  // Warm-up: modules, JIT, connections, both stores.
  for (const v of variants) await batch(v, CONCURRENCY);
  report("\n1. Fresh stores", await rounds());
  for (let done = 0; done < GROW; done += CONCURRENCY) for (const v of variants) await batch(v, CONCURRENCY);
  report(`\n2. After ${GROW} more runs in each store`, await rounds());
} finally {
  server.stop();
  rmSync(dir, { recursive: true, force: true });
}
