/**
 * Following runs that other processes execute (docs/scale-out.md#live-events):
 * a server hears on `runtime_events` that a run has new events in the store
 * (or is done), and each client following that run reads them from the
 * store after the last one it sent. A poll every few seconds covers a
 * notification lost with a connection.
 */
import type { RunEvent } from "../events/types.js";
import type { Store } from "../store/store.js";
import { ChannelListener } from "./listener.js";
import type { RunQueue } from "./run-queue.js";

import { EVENTS_CHANNEL } from "../store/postgres/run-store.js";

const POLL_MS = 2_000;

export interface Follower {
  /** Send events of the run after `after`, in order; false when the client is gone. */
  send(event: RunEvent): Promise<boolean>;
  end(): void;
  onClose(fn: () => void): void;
}

export class RunFollowers {
  private readonly byTask = new Map<string, Set<() => void>>();

  private constructor(
    private readonly store: Store,
    private readonly queue: RunQueue,
    private readonly listener: ChannelListener,
  ) {}

  static async open(store: Store, queue: RunQueue): Promise<RunFollowers> {
    const listener = new ChannelListener(store.database?.url ?? "");
    const followers = new RunFollowers(store, queue, listener);
    listener.on(EVENTS_CHANNEL, (payload) => {
      const task = payload.slice(0, payload.lastIndexOf(" "));
      for (const fn of followers.byTask.get(task) ?? []) fn();
    });
    listener.onReconnect(() => {
      for (const set of followers.byTask.values()) for (const fn of set) fn();
    });
    await listener.start();
    return followers;
  }

  get up(): boolean {
    return this.listener.up;
  }

  /**
   * Stream the run's events after `after` to `to`, live, until the run is
   * done: its last event is run.finished and its request is no longer
   * queued or running (a run handed back between workers finishes twice).
   */
  follow(taskId: string, after: number, to: Follower): void {
    let last = after;
    let lastType: string | undefined;
    let pumping = false;
    let again = false;
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      clearInterval(poll);
      const set = this.byTask.get(taskId);
      set?.delete(pump);
      if (set?.size === 0) this.byTask.delete(taskId);
    };
    const pump = (): void => {
      if (stopped) return;
      if (pumping) {
        again = true;
        return;
      }
      pumping = true;
      void (async () => {
        try {
          do {
            again = false;
            for (const event of await this.store.runs.eventsOfTask(taskId, last)) {
              if (!(await to.send(event))) return stop();
              last = event.seq;
              lastType = event.type;
            }
            if (lastType === "run.finished") {
              const state = await this.queue.stateOf(taskId);
              if (state !== "queued" && state !== "running") {
                stop();
                to.end();
                return;
              }
            }
          } while (again && !stopped);
        } catch {
          stop();
          to.end();
        } finally {
          pumping = false;
        }
      })();
    };
    let set = this.byTask.get(taskId);
    if (!set) this.byTask.set(taskId, (set = new Set()));
    set.add(pump);
    const poll = setInterval(pump, POLL_MS);
    poll.unref();
    to.onClose(stop);
    pump();
  }

  async close(): Promise<void> {
    this.byTask.clear();
    await this.listener.close();
  }
}
