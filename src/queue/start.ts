/**
 * The library's door to workers (docs/scale-out.md#workers): the queue and
 * its job library load on the first call, so importing the library stays
 * light for applications that never run one.
 */
import type { RunWorker, WorkerOptions } from "./worker.js";

export type { RunWorker, WorkerOptions } from "./worker.js";

/** Start a worker in this process: it takes queued runs of `options.teams` until `stop()`. */
export async function startWorker(options: WorkerOptions): Promise<RunWorker> {
  const { startWorker: start } = await import("./worker.js");
  return start(options);
}
