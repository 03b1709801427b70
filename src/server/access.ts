/**
 * Who may reach which run (docs/security.md#who-can-reach-what), checked
 * here for every route and protocol: a caller needs the scope of what it
 * asks (`run`, `read`, `approve`), and a run it names must be its own (the
 * caller that started it, as stored with the run) unless it is `admin`.
 * Someone else's run answers as a run that does not exist: 404.
 */
import type { RunQueue } from "../queue/run-queue.js";
import type { RunStore, RunSummary } from "../store/runs.js";
import { may, type Caller, type Scope } from "./auth.js";
import { HttpError } from "./http.js";
import type { LiveRuns } from "./live-runs.js";

/** What the checks read of a request's context (`ApiContext`, src/server/runs-api.ts). */
interface ApiContext {
  caller: Caller;
  store: RunStore;
  live: LiveRuns;
  queued?: { queue: RunQueue };
}

const WHAT: Record<Scope, string> = {
  run: "start or continue runs",
  read: "read runs",
  approve: "decide approvals",
  admin: "administer this server",
};

/** Throw 403 unless `caller` has `scope` (or `admin`). */
export function requireScope(caller: Caller, scope: Scope): void {
  if (!may(caller, scope)) throw new HttpError(403, `caller ${caller.name} may not ${WHAT[scope]}: its token lacks the '${scope}' scope`);
}

/**
 * Who started a run: as stored with it (`run.started.caller`), else as this
 * server or the queue knows it before that event is stored. Undefined for a
 * run started by no caller (the CLI, a runtime before callers existed).
 */
async function ownerOf(ctx: ApiContext, taskId: string, stored?: RunSummary): Promise<string | undefined> {
  const summary = stored ?? (await ctx.store.run(taskId));
  return summary?.caller ?? ctx.live.get(taskId)?.caller ?? (ctx.queued ? await ctx.queued.queue.callerOf(taskId) : undefined);
}

/** Whether the request's caller has `scope` and the run is its own (an admin's: any run). */
export async function mayReach(ctx: ApiContext, taskId: string, scope: Scope, stored?: RunSummary): Promise<boolean> {
  if (!may(ctx.caller, scope)) return false;
  return ctx.caller.scopes.has("admin") || (await ownerOf(ctx, taskId, stored)) === ctx.caller.name;
}

/**
 * The check of every route that names a run: 403 without the scope, 404
 * when the run is someone else's (the same answer as no run at all).
 */
export async function checkRun(ctx: ApiContext, taskId: string, scope: Scope): Promise<void> {
  requireScope(ctx.caller, scope);
  if (!(await mayReach(ctx, taskId, scope))) throw new HttpError(404, `no run with task_id ${taskId}`);
}

/** The listing filter of the request's caller: its own runs, every run for an admin. */
export function ownRuns(ctx: ApiContext): { caller?: string } {
  requireScope(ctx.caller, "read");
  return ctx.caller.scopes.has("admin") ? {} : { caller: ctx.caller.name };
}
