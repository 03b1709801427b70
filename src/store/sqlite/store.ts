/**
 * The embedded store (docs/scale-out.md#stores): SQLite files under a trace
 * directory, `traces.db` (runs), `plans.db` (plans), `sessions.db` (todo
 * sessions, conversations) and `attachments.db`, each opened when first needed.
 */
import { join, resolve } from "node:path";
import { PlanTool, type PlanToolOptions } from "../../plan/plan-tool.js";
import type { RunStore } from "../runs.js";
import type { Store } from "../store.js";
import { SqliteConversations } from "./conversations.js";
import { SqliteAttachments } from "./attachments.js";
import { PlanStore } from "./plan-store.js";
import { sqliteRunStore } from "./run-store.js";
import { SqliteTodoSessions } from "./todo-sessions.js";
import { TraceStore, makeDirectory } from "./trace-store.js";

/**
 * The trace databases open in this process, by directory, and how many
 * store handles hold each: the runs of a process share one connection and
 * its committer (group commit across runs), and the last handle to close
 * closes the file. Whoever makes a handle keeps it: the CLI for its run, the
 * server for its life, a run given no store for itself. Opening and closing
 * the file per run cost ~11 ms (2.1 ms CPU, the close checkpointing the
 * WAL) where a run sharing a held one paid ~1.2 ms (0.8 ms CPU).
 */
const databases = new Map<string, { trace: TraceStore; runs: RunStore; holders: number }>();

/**
 * The store of the trace directory `dir`. Making it opens nothing: the run
 * store opens `traces.db` (or shares it while another handle holds it) on
 * first use (`ping` opens it, to report a directory that cannot hold it),
 * and closing the handle lets it go. `create: false` refuses a directory
 * without its files (reading a stored run): NOT_FOUND.
 */
export function sqliteStore(dir: string, options: { create?: boolean } = {}): Store {
  const location = resolve(dir);
  const create = options.create ?? true;
  let held: RunStore | undefined;
  const hold = (): RunStore => {
    if (!held) {
      let entry = databases.get(location);
      if (!entry) {
        const trace = TraceStore.open(location, { create });
        entry = { trace, runs: sqliteRunStore(trace), holders: 0 };
        databases.set(location, entry);
      }
      entry.holders++;
      held = entry.runs;
    }
    return held;
  };
  return {
    kind: "sqlite",
    location,
    get runs() {
      return hold();
    },
    planTool: () => openPlanTool(location),
    todoSessions: () => new SqliteTodoSessions(location),
    conversations: () => new SqliteConversations(location),
    attachments: () => new SqliteAttachments(location, { create }),
    ping: async () => {
      hold();
    },
    close: async () => {
      if (!held) return;
      held = undefined;
      const entry = databases.get(location);
      if (!entry || --entry.holders > 0) return;
      databases.delete(location);
      await entry.runs.close();
      entry.trace.close();
    },
  };
}

/** File name of the plan database inside a trace directory. */
export const PLANS_DB = "plans.db";

/** A PlanTool over a plan database file, or `:memory:`. `create: false` refuses a missing file. */
export function openPlanFile(file: string, options: PlanToolOptions & { create?: boolean } = {}): PlanTool {
  return new PlanTool(new PlanStore(file, options.now, { create: options.create ?? true }), options);
}

const openTools = new Map<string, PlanTool>();

/**
 * The PlanTool of a trace directory (`<traceDir>/plans.db`), one per
 * directory per process so every run in the process shares its lock.
 */
export function openPlanTool(traceDir: string): PlanTool {
  const dir = resolve(traceDir);
  let tool = openTools.get(dir);
  if (!tool) {
    makeDirectory(dir);
    tool = openPlanFile(join(dir, PLANS_DB));
    openTools.set(dir, tool);
  }
  return tool;
}

/** Close and forget a cached PlanTool (tests, shutdown). */
export function closePlanTool(traceDir: string): void {
  const dir = resolve(traceDir);
  // A SQLite-backed plan store closes synchronously: there is nothing to await.
  void openTools.get(dir)?.close();
  openTools.delete(dir);
}
