import { describe, expect, it } from "vitest";
import { createLimiter, mapLimited } from "../../../src/kinds/plan-solver/concurrency.js";

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("createLimiter", () => {
  it.each([1, 2, 3])("never runs more than %i at once, and keeps order of results", async (limit) => {
    let running = 0;
    let peak = 0;
    const results = await mapLimited([5, 1, 4, 2, 3, 1], limit, async (ms, i) => {
      running++;
      peak = Math.max(peak, running);
      await tick(ms * 5);
      running--;
      return i;
    });
    expect(results).toEqual([0, 1, 2, 3, 4, 5]);
    expect(peak).toBe(limit);
  });

  it("frees the slot of a failing task", async () => {
    const limiter = createLimiter(1);
    const failed = limiter.run(() => {
      throw new Error("boom");
    });
    const next = limiter.run(async () => "ran");
    await expect(failed).rejects.toThrow("boom");
    await expect(next).resolves.toBe("ran");
    expect(limiter.active).toBe(0);
    expect(limiter.pending).toBe(0);
  });

  it("refuses a limit below 1", () => {
    expect(() => createLimiter(0)).toThrow("concurrency must be an integer >= 1");
  });
});
