#!/usr/bin/env node
/**
 * Runs every benchmark in turn, each in its own process so that none warms
 * up or slows down another; their output goes straight to this terminal.
 * Extra arguments (e.g. `--quick`) are passed to react-loop.mjs and
 * startup.mjs only, since each benchmark has its own flags.
 *
 *   npm run bench [-- --quick]
 */
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const benches = ["react-loop.mjs", "startup.mjs", "plan-solver.mjs", "plan-tool.mjs", "trace-ids.mjs", "serve-load.mjs", "scale-out.mjs", "compaction.mjs"];
const extra = process.argv.slice(2);
let failed = 0;
for (const name of benches) {
  console.log(`\n=== ${name} ===\n`);
  const args = [join(here, name), ...(name === "react-loop.mjs" || name === "startup.mjs" ? extra : [])];
  const run = spawnSync(process.execPath, args, { stdio: "inherit" });
  if (run.status !== 0) {
    failed++;
    console.log(`\n${name} failed (exit ${run.status ?? run.signal})`);
  }
}
process.exitCode = failed ? 1 : 0;
