/**
 * Trying again (docs/scale-out.md#when-the-database-goes-away,
 * docs/model-servers.md): one curve, `pauseBefore`, and one loop, `retry`,
 * for everything that waits for something to come back, with a named policy
 * per use. The pause doubles from `firstMs` to `maxMs`, and a random share
 * of it (`jitter`) is taken off, so a fleet that failed together does not
 * knock again in step; a wait the server asks for (`retry-after`) is obeyed
 * instead. Clock, sleep and randomness can be given, for tests.
 */

export interface RetryPolicy {
  /** The pause after the first failed try, in ms. */
  firstMs: number;
  /** The longest pause, in ms. */
  maxMs: number;
  /** The share of a pause taken off at random, 0 to 1: 0.25 makes 1 s a pause between 0.75 and 1 s. */
  jitter: number;
  /** Tries in all, the first one included. @default no limit */
  tries?: number;
  /** No pause starts once this long has passed since the loop began (its last error stands). @default no limit */
  forMs?: number;
}

/** The policy of each loop that tries again. */
export const retryPolicies = {
  /** A model request (src/models/openai-client.ts): 0.5 s doubling to 8 s; its tries and deadline come from the model's config. */
  modelCall: { firstMs: 500, maxMs: 8_000, jitter: 0.25 },
  /** A commit while PostgreSQL is away (src/store/committer.ts): 0.1 s doubling to 5 s, for two minutes, then the write is given up with a warning. */
  storeWrite: { firstMs: 100, maxMs: 5_000, jitter: 0.25, forMs: 120_000 },
  /** A read (or an idempotent write) while PostgreSQL is away (src/store/postgres/connect.ts): as a commit, for 30 s. */
  storeRead: { firstMs: 100, maxMs: 5_000, jitter: 0.25, forMs: 30_000 },
  /** A worker recording a run's end while PostgreSQL is away (src/queue/worker.ts): as a commit, for as long as it holds the run's lease. */
  leaseWrite: { firstMs: 100, maxMs: 5_000, jitter: 0.25 },
  /** The queue's schema lock, held by another process starting (src/queue/run-queue.ts): 0.1 s doubling to 1 s, until it is free. */
  queueLock: { firstMs: 100, maxMs: 1_000, jitter: 0.25 },
  /** A worker's look at the queue while the store fails (src/queue/worker.ts): from its poll interval, doubling to 5 s; half of it at random spreads a fleet's polls. */
  queuePoll: (pollMs: number): RetryPolicy => ({ firstMs: pollMs, maxMs: Math.max(pollMs, 5_000), jitter: 0.5 }),
  /** The LISTEN connection lost (src/store/postgres/listener.ts): 0.5 s doubling to 10 s, until it is back. */
  listenerReconnect: { firstMs: 500, maxMs: 10_000, jitter: 0.25 },
  /** `runtime worker` and `serve` started before PostgreSQL (src/cli/until-reachable.ts): 1 s doubling to 10 s, until it answers. */
  startWait: { firstMs: 1_000, maxMs: 10_000, jitter: 0.4 },
} as const satisfies Record<string, RetryPolicy | ((...args: never[]) => RetryPolicy)>;

/** The pause after failed try `attempt` (0 for the first), in ms: the one curve. */
export function pauseBefore(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  // 2 ** 30 is past any cap: the exponent stops growing there, not the pause.
  const full = Math.min(policy.maxMs, policy.firstMs * 2 ** Math.min(attempt, 30));
  return Math.round(full * (1 - policy.jitter * random()));
}

/** A pause of `ms` that ends early, without an error, when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

export interface RetryOptions {
  policy: RetryPolicy;
  /** Whether a failure is worth another try; any other is thrown at once. */
  isRetryable: (err: unknown) => boolean;
  /** Stops the loop (its reason is thrown): between tries, and during a pause. */
  signal?: AbortSignal;
  /** The wait a failure asks for (a server's `retry-after`), taken instead of the curve. */
  retryAfter?: (err: unknown) => number | undefined;
  /** Told before each pause (a line for an operator, say); what it throws ends the loop instead. */
  onRetry?: (failure: { error: unknown; attempt: number; pauseMs: number }) => void;
  /** A first try made by the caller already failed so: the loop begins with its pause. */
  after?: unknown;
  /** @default Date.now, `sleep` and Math.random */
  clock?: { now(): number; sleep(ms: number, signal?: AbortSignal): Promise<void>; random(): number };
}

const realClock = { now: Date.now, sleep, random: Math.random };

/**
 * `work(attempt)` until it succeeds; after a retryable failure, again after
 * the policy's pause. The last error is thrown when it is not retryable,
 * the tries are spent or `forMs` has passed.
 */
export async function retry<T>(work: (attempt: number) => Promise<T>, options: RetryOptions): Promise<T> {
  const { policy, isRetryable, signal, clock = realClock } = options;
  const since = clock.now();
  let attempt = 0;
  let error = options.after;
  if ("after" in options) attempt = 1;
  for (;;) {
    if (attempt > 0) {
      const spent = (policy.tries !== undefined && attempt >= policy.tries) || (policy.forMs !== undefined && clock.now() - since >= policy.forMs);
      if (spent || !isRetryable(error)) throw error;
      const pauseMs = options.retryAfter?.(error) ?? pauseBefore(policy, attempt - 1, clock.random);
      options.onRetry?.({ error, attempt: attempt - 1, pauseMs });
      await clock.sleep(pauseMs, signal);
    }
    signal?.throwIfAborted();
    try {
      return await work(attempt);
    } catch (err) {
      error = err;
    }
    attempt++;
  }
}
