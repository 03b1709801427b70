/**
 * A conversation's events as one stream (docs/sessions.md): the session's
 * runs the caller may read (src/server/access.ts), then each new one as it
 * is stored.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { follow } from "../store/follow.js";
import type { Watch } from "../store/runs.js";
import { ownRuns } from "./access.js";
import { HttpError } from "./http.js";
import type { ApiContext } from "./runs-api.js";
import { EventStream, lastRunEventId } from "./sse.js";

/**
 * `GET /v1/sessions/:session_id/events`: the events of every run of a
 * conversation (docs/sessions.md), oldest run first, then those of its runs
 * as they are stored, whichever run of this server or worker of its store
 * runs them, until the client leaves. Ids are `<task_id>:<seq>`; a
 * reconnecting client's Last-Event-ID resumes after that event.
 */
export async function streamSession(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, sessionId: string): Promise<void> {
  if (!/^[\w.:-]{1,128}$/.test(sessionId)) throw new HttpError(400, "a session id is 1-128 characters of letters, digits, '_', '-', '.', ':'");
  // The session's runs this caller may read: its own (all, for an admin); another caller's are as another session's.
  const own = ownRuns(ctx);
  const after = lastRunEventId(req.headers["last-event-id"]);
  const stream = new EventStream(res, { headers: { "x-session-id": sessionId }, stallLimitMs: ctx.stallLimitMs, ids: "run" });
  const gone = new AbortController();
  /** The session's runs, oldest first; per run the last seq sent (MAX_SAFE_INTEGER: all the client had). */
  const runs: string[] = [];
  const sent = new Map<string, number>();
  /** Runs heard of since they were last read; runs heard of that may be new to the session; runs of other sessions. */
  const pending = new Set<string>();
  const unknown = new Set<string>();
  const foreign = new Set<string>();
  let relist = true;
  let wake = (): void => {};
  stream.onClose(() => {
    gone.abort();
    wake();
  });
  let watch: Watch | undefined;
  try {
    // Listening before the first read: a commit after it is heard, one before it is read.
    watch = await ctx.store.watch("*", (task) => {
      if (task === "*") {
        relist = true;
        for (const run of runs) pending.add(run);
      } else if (sent.has(task)) pending.add(task);
      else if (!foreign.has(task)) {
        unknown.add(task);
        relist = true;
      }
      wake();
    });
    for (let first = true; stream.open; first = false) {
      if (relist) {
        relist = false;
        const heard = [...unknown];
        unknown.clear();
        const listed = (await ctx.store.listRuns({ session: sessionId, limit: 1000, ...own })).reverse().map((r) => r.task_id);
        for (const task of listed) {
          if (sent.has(task)) continue;
          runs.push(task);
          sent.set(task, 0);
          pending.add(task);
        }
        // A run's first commit holds its run.started, so a run heard of and not listed is another session's.
        for (const task of heard) if (!sent.has(task)) foreign.add(task);
        if (first && after) {
          // What the client had: every run before its last one, and that one up to its last event.
          const at = runs.indexOf(after.task_id);
          for (const task of runs.slice(0, Math.max(at, 0))) sent.set(task, Number.MAX_SAFE_INTEGER);
          if (at >= 0) sent.set(after.task_id, after.seq);
        }
      }
      for (const task of runs) {
        if (!pending.delete(task) || sent.get(task) === Number.MAX_SAFE_INTEGER) continue;
        for await (const { event } of follow(ctx.store, task, sent.get(task) ?? 0, { more: () => false, signal: gone.signal })) {
          if (!(await stream.send(event))) return;
          sent.set(task, event.seq);
        }
      }
      if (pending.size === 0 && !relist && stream.open) await new Promise<void>((resolve) => (wake = resolve));
    }
  } catch {
    stream.end();
  } finally {
    watch?.close();
  }
}
