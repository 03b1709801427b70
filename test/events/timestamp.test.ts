import { describe, expect, test } from "vitest";
import { isoTime } from "../../src/timestamp.js";

describe("isoTime", () => {
  test("is toISOString's text for every date, whether its millisecond was the last one seen or not", () => {
    const times = [0, 1, 1, 999, 1000, 1_764_000_000_123, 1_764_000_000_123, 1_764_000_000_124, -1, -62_198_755_200_000, 253_402_300_800_000, 8.64e15, -8.64e15, 1_764_000_000_123];
    for (const t of times) expect(isoTime(new Date(t))).toBe(new Date(t).toISOString());
    let state = 1_764_000_000_000;
    for (let i = 0; i < 2000; i++) {
      state += Math.floor(Math.random() * 3) - (i % 97 === 0 ? 5000 : 0);
      expect(isoTime(new Date(state))).toBe(new Date(state).toISOString());
    }
  });

  test("an invalid date throws as toISOString does, every time", () => {
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError);
    expect(() => isoTime(new Date(Number.NaN))).toThrow(RangeError);
    expect(isoTime(new Date(5))).toBe("1970-01-01T00:00:00.005Z");
  });
});
