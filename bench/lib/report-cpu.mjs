/**
 * A preload (`node --import=bench/lib/report-cpu.mjs ...`) that writes the
 * process's CPU time (user + system, ms) to $BENCH_CPU_FILE when it exits:
 * how bench/startup.mjs reads the CPU of a child it spawned.
 */
import { writeFileSync } from "node:fs";

process.on("exit", () => {
  const { user, system } = process.cpuUsage();
  if (process.env.BENCH_CPU_FILE) writeFileSync(process.env.BENCH_CPU_FILE, String((user + system) / 1000));
});
