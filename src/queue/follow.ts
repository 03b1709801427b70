/**
 * Following a run the queue's workers execute (docs/scale-out.md#live-events):
 * the store's one follow (src/store/follow.ts), which hears of new events over
 * LISTEN/NOTIFY on `runtime_events`, with the queue's rule for its end.
 */
import type { RunEvent } from "../events/types.js";
import type { FollowOptions } from "../store/follow.js";
import type { RunQueue } from "./run-queue.js";

/**
 * `FollowOptions.more` for a queued run: more may come while its request is
 * queued or running. A run handed back between workers finishes twice, so
 * its run.finished alone does not end it; the queue notifies
 * `<task_id> done` when it marks the request done, which wakes the follower.
 */
export function whileQueued(queue: RunQueue, taskId: string): NonNullable<FollowOptions["more"]> {
  return async (_seq: number, last: RunEvent | undefined) => {
    // Mid-run: no need to ask the queue at every commit.
    if (last !== undefined && last.type !== "run.finished") return true;
    const state = await queue.stateOf(taskId);
    return state === "queued" || state === "running";
  };
}
