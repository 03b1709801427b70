/**
 * Who hears of the events committed to a SQLite file in this process
 * (docs/server.md#where-an-event-reaches-the-stream): every TraceStore on the
 * file signals after each committed append, so a run's writer and a server's
 * reader, two handles on one file, meet here by the file's path. Writers in
 * other processes are not heard: following across processes is PostgreSQL's
 * (docs/scale-out.md#live-events).
 */
import { resolve } from "node:path";
import type { AppendBatch, Watch } from "../runs.js";

type OnStored = (taskId: string) => void;

/** By file, then by task id (`"*"`: every run). */
const watchers = new Map<string, Map<string, Set<OnStored>>>();

/** Call `onStored` after each commit of events of `taskId` (`"*"`: of any run) to `file`. */
export function watchFile(file: string, taskId: string, onStored: OnStored): Watch {
  const key = resolve(file);
  let byTask = watchers.get(key);
  if (!byTask) watchers.set(key, (byTask = new Map()));
  let set = byTask.get(taskId);
  if (!set) byTask.set(taskId, (set = new Set()));
  set.add(onStored);
  return {
    up: true,
    close: () => {
      set.delete(onStored);
      if (set.size === 0) byTask.delete(taskId);
      if (byTask.size === 0 && watchers.get(key) === byTask) watchers.delete(key);
    },
  };
}

/** The batches are committed to `file`: tell whoever watches their runs. */
export function stored(file: string, batches: readonly AppendBatch[]): void {
  if (watchers.size === 0) return;
  const byTask = watchers.get(resolve(file));
  if (!byTask) return;
  const tasks = new Set<string>();
  for (const [events] of batches) for (const event of events) tasks.add(event.task_id);
  const any = byTask.get("*");
  for (const task of tasks) {
    for (const fn of byTask.get(task) ?? []) fn(task);
    for (const fn of any ?? []) fn(task);
  }
}
