/**
 * A run killed as a user's machine would kill it: a real `runtime exec`
 * process, SIGKILLed as a chosen model request arrives (which is then left
 * unanswered), and what its store holds afterwards (docs/durable-runs.md).
 */
import { spawn } from "node:child_process";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";
import type { RunEvent } from "../../src/events/types.js";
import { BIN, ROOT } from "./cli.js";

/** Where a model request arrives: return "drop" to leave it unanswered. */
export type Arrival = { onArrival?: (index: number) => "drop" | void };

/** `runtime exec ARGS`, killed with SIGKILL as model request `killAt` (from 0) arrives, which is dropped. */
export function execKilledAt(args: string[], server: Arrival, killAt: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "exec", ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" }, stdio: "ignore" });
    server.onArrival = (index) => {
      if (index !== killAt) return;
      child.kill("SIGKILL");
      return "drop";
    };
    const timer = setTimeout(() => reject(new Error("the run was never killed")), 20_000);
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      server.onArrival = undefined;
      if (signal !== "SIGKILL") reject(new Error(`the run ended by itself before it was killed (exit ${code})`));
      else resolve();
    });
  });
}

/** The one run stored under `traceDir`: its id, how many model replies its journal holds, its events. */
export function storedRun(traceDir: string): { task_id: string; replies: number; events: RunEvent[] } {
  const store = TraceStore.open(traceDir, { create: false });
  try {
    const run = store.listRuns()[0];
    if (!run) throw new Error("no run stored");
    const journal = store.journalOf(run.task_id);
    return { task_id: run.task_id, replies: journal.filter((e) => e.kind === "model.reply").length, events: store.eventsOfTask(run.task_id) };
  } finally {
    store.close();
  }
}
