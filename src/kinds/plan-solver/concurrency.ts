/** A small concurrency limiter: at most `limit` tasks in flight, started in submission order. */

/** Runs submitted tasks with at most `limit` in flight. */
export interface Limiter {
  /** Run `task` when a slot is free; settles like `task` does. */
  run<T>(task: () => Promise<T>): Promise<T>;
  /** Tasks running now. */
  readonly active: number;
  /** Tasks waiting for a slot. */
  readonly pending: number;
}

/** A limiter allowing `limit` (an integer ≥ 1) tasks at once. */
export function createLimiter(limit: number): Limiter {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency must be an integer >= 1, got ${limit}`);
  let active = 0;
  const queue: Array<() => void> = [];

  const release = () => {
    active--;
    queue.shift()?.();
  };

  return {
    run<T>(task: () => Promise<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const start = () => {
          active++;
          // A task that throws synchronously must still free its slot.
          Promise.resolve().then(task).then(resolve, reject).finally(release);
        };
        if (active < limit) start();
        else queue.push(start);
      });
    },
    get active() {
      return active;
    },
    get pending() {
      return queue.length;
    },
  };
}

/** `fn` over `items` with at most `limit` in flight; results in item order. */
export function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const limiter = createLimiter(limit);
  return Promise.all(items.map((item, index) => limiter.run(() => fn(item, index))));
}
