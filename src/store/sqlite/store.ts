/**
 * The embedded store (docs/scale-out.md#stores): SQLite files under a trace
 * directory, `traces.db` (runs), `plans.db` (plans) and `sessions.db` (todo
 * sessions, conversations), each opened when first needed.
 */
import { join, resolve } from "node:path";
import { PlanTool, type PlanToolOptions } from "../../plan/plan-tool.js";
import type { Store } from "../store.js";
import { SqliteConversations } from "./conversations.js";
import { PlanStore } from "./plan-store.js";
import { sqliteRunStore } from "./run-store.js";
import { SqliteTodoSessions } from "./todo-sessions.js";
import { TraceStore, makeDirectory } from "./trace-store.js";

/**
 * The store of the trace directory `dir`. Making it opens nothing: the run
 * store opens `traces.db` on first use (`ping` opens it, to report a
 * directory that cannot hold it), and closing it closes that file.
 */
export function sqliteStore(dir: string): Store {
  const location = resolve(dir);
  let trace: TraceStore | undefined;
  let runs: Store["runs"] | undefined;
  const open = (): Store["runs"] => {
    if (!runs) {
      trace = TraceStore.open(location);
      runs = sqliteRunStore(trace);
    }
    return runs;
  };
  return {
    kind: "sqlite",
    location,
    get runs() {
      return open();
    },
    planTool: () => openPlanTool(location),
    todoSessions: () => new SqliteTodoSessions(location),
    conversations: () => new SqliteConversations(location),
    ping: async () => {
      open();
    },
    close: async () => trace?.close(),
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
  openTools.get(dir)?.close();
  openTools.delete(dir);
}
