/**
 * src/retry.ts: the one curve and the one loop, on a clock that only moves
 * when the loop sleeps (no wall-clock time) and a given randomness.
 */
import { describe, expect, it } from "vitest";
import { pauseBefore, retry, retryPolicies, sleep, type RetryOptions, type RetryPolicy } from "../../src/retry.js";

/** A clock whose time passes only in `sleep`, which records each pause. */
function fakeClock(random = () => 0) {
  const pauses: number[] = [];
  let now = 1_000_000;
  return {
    pauses,
    clock: {
      now: () => now,
      random,
      sleep: async (ms: number) => {
        pauses.push(ms);
        now += ms;
      },
    },
  };
}

class Transient extends Error {}
const isRetryable = (err: unknown) => err instanceof Transient;

/** Work that fails with `errors`, one per try, then answers "done". */
function failing(...errors: unknown[]) {
  const tried: number[] = [];
  const work = async (attempt: number) => {
    tried.push(attempt);
    const error = errors.shift();
    if (error !== undefined) throw error;
    return "done";
  };
  return { work, tried };
}

const policy: RetryPolicy = { firstMs: 100, maxMs: 1_000, jitter: 0.5 };

describe("pauseBefore", () => {
  it("doubles from firstMs to maxMs", () => {
    expect([0, 1, 2, 3, 4, 5, 40].map((a) => pauseBefore(policy, a, () => 0))).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
  });

  it("takes at most the jitter's share off, never adds", () => {
    expect(pauseBefore(policy, 0, () => 1)).toBe(50);
    expect(pauseBefore(policy, 4, () => 0.5)).toBe(750);
    expect(pauseBefore({ ...policy, jitter: 0 }, 2, () => 0.9)).toBe(400);
  });

  it("keeps each use's curve (the ones the loops had before)", () => {
    const at = (p: RetryPolicy) => [0, 1, 2, 3, 4, 5, 6].map((a) => pauseBefore(p, a, () => 0));
    expect(at(retryPolicies.modelCall)).toEqual([500, 1000, 2000, 4000, 8000, 8000, 8000]);
    expect(at(retryPolicies.storeWrite)).toEqual([100, 200, 400, 800, 1600, 3200, 5000]);
    expect(at(retryPolicies.queueLock)).toEqual([100, 200, 400, 800, 1000, 1000, 1000]);
    expect(at(retryPolicies.startWait)).toEqual([1000, 2000, 4000, 8000, 10000, 10000, 10000]);
    expect(at(retryPolicies.queuePoll(1_000))).toEqual([1000, 2000, 4000, 5000, 5000, 5000, 5000]);
    expect(retryPolicies.storeWrite.forMs).toBe(120_000);
    expect(retryPolicies.storeRead.forMs).toBe(30_000);
  });
});

describe("retry", () => {
  const options = (clock: ReturnType<typeof fakeClock>["clock"], more: Partial<RetryOptions> = {}): RetryOptions => ({
    policy,
    isRetryable,
    clock,
    ...more,
  });

  it("tries again after each retryable failure, pausing on the curve", async () => {
    const { clock, pauses } = fakeClock();
    const { work, tried } = failing(new Transient("a"), new Transient("b"), new Transient("c"));
    await expect(retry(work, options(clock))).resolves.toBe("done");
    expect(tried).toEqual([0, 1, 2, 3]);
    expect(pauses).toEqual([100, 200, 400]);
  });

  it("throws a failure that is not retryable at once", async () => {
    const { clock, pauses } = fakeClock();
    const bad = new Error("bad request");
    const { work, tried } = failing(new Transient("a"), bad);
    await expect(retry(work, options(clock))).rejects.toBe(bad);
    expect(tried).toEqual([0, 1]);
    expect(pauses).toEqual([100]);
  });

  it("stops after `tries` tries in all, with the last error", async () => {
    const { clock } = fakeClock();
    const last = new Transient("third");
    const { work, tried } = failing(new Transient("first"), new Transient("second"), last, new Transient("fourth"));
    await expect(retry(work, options(clock, { policy: { ...policy, tries: 3 } }))).rejects.toBe(last);
    expect(tried).toEqual([0, 1, 2]);
  });

  it("starts no pause once `forMs` has passed", async () => {
    const { clock, pauses } = fakeClock();
    const errors = Array.from({ length: 20 }, (_, i) => new Transient(String(i)));
    const { work } = failing(...errors);
    // 100 + 200 + 400 = 700 ms of pauses reach forMs: the fourth try's error stands.
    await expect(retry(work, options(clock, { policy: { ...policy, forMs: 700 } }))).rejects.toBe(errors[3]);
    expect(pauses).toEqual([100, 200, 400]);
  });

  it("obeys the wait a failure asks for instead of the curve", async () => {
    const { clock, pauses } = fakeClock();
    const { work } = failing(new Transient("429"), new Transient("503"));
    const retryAfter = (err: unknown) => ((err as Error).message === "429" ? 2_500 : undefined);
    await expect(retry(work, options(clock, { retryAfter }))).resolves.toBe("done");
    expect(pauses).toEqual([2_500, 200]);
  });

  it("tells onRetry of each pause, and what onRetry throws ends the loop", async () => {
    const { clock, pauses } = fakeClock(() => 1);
    const told: string[] = [];
    const { work } = failing(new Transient("a"), new Transient("b"), new Transient("c"));
    const enough = new Error("enough");
    const onRetry: RetryOptions["onRetry"] = ({ error, attempt, pauseMs }) => {
      told.push(`${(error as Error).message} #${attempt}: ${pauseMs} ms`);
      if (attempt === 1) throw enough;
    };
    await expect(retry(work, options(clock, { onRetry }))).rejects.toBe(enough);
    expect(told).toEqual(["a #0: 50 ms", "b #1: 100 ms"]);
    expect(pauses).toEqual([50]);
  });

  it("begins with the pause when the caller's first try already failed (`after`)", async () => {
    const { clock, pauses } = fakeClock();
    const { work, tried } = failing(new Transient("again"));
    await expect(retry(work, options(clock, { after: new Transient("first"), policy: { ...policy, tries: 3 } }))).resolves.toBe("done");
    expect(tried).toEqual([1, 2]);
    expect(pauses).toEqual([100, 200]);
  });

  it("throws the signal's reason when aborted during a pause, and tries no more", async () => {
    const controller = new AbortController();
    const { clock } = fakeClock();
    const pausing = {
      ...clock,
      sleep: async (ms: number, signal?: AbortSignal) => {
        controller.abort(new Error("stopped"));
        await clock.sleep(ms);
        expect(signal?.aborted).toBe(true);
      },
    };
    const { work, tried } = failing(new Transient("a"), new Transient("b"));
    await expect(retry(work, options(pausing, { signal: controller.signal }))).rejects.toThrow("stopped");
    expect(tried).toEqual([0]);
  });
});

describe("sleep", () => {
  it("ends at once, without an error, when its signal aborts", async () => {
    const controller = new AbortController();
    const slept = sleep(3_600_000, controller.signal);
    controller.abort();
    await expect(slept).resolves.toBeUndefined();
    await expect(sleep(3_600_000, AbortSignal.abort())).resolves.toBeUndefined();
  });
});
