import { describe, expect, it } from "vitest";
import { canTransition, derivePlanStatus, describeRefusal, TRANSITIONS } from "../../src/plan/transitions.js";
import { TASK_STATUSES, type TaskStatus } from "../../src/plan/types.js";

const VALID: [TaskStatus, TaskStatus][] = [
  ["ready", "inprogress"],
  ["ready", "skipped"],
  ["inprogress", "completed"],
  ["inprogress", "error"],
  ["inprogress", "ready"],
  ["error", "inprogress"],
  ["error", "skipped"],
];

describe("task transitions", () => {
  it("accepts exactly the documented table, all 25 pairs checked", () => {
    let accepted = 0;
    for (const from of TASK_STATUSES) {
      for (const to of TASK_STATUSES) {
        const expected = VALID.some(([f, t]) => f === from && t === to);
        expect(canTransition(from, to), `${from} → ${to}`).toBe(expected);
        if (expected) accepted++;
      }
    }
    expect(accepted).toBe(VALID.length);
  });

  it("treats completed and skipped as terminal", () => {
    expect(TRANSITIONS.completed).toEqual([]);
    expect(TRANSITIONS.skipped).toEqual([]);
    expect(describeRefusal("completed", "inprogress")).toMatch(/nothing \(terminal\)/);
    expect(describeRefusal("ready", "completed")).toMatch(/inprogress or skipped/);
  });
});

describe("derived plan status", () => {
  const req = (status: TaskStatus) => ({ status, optional: false });
  const opt = (status: TaskStatus) => ({ status, optional: true });

  it("is running while any task has not settled", () => {
    expect(derivePlanStatus([req("completed"), req("ready")])).toBe("running");
    expect(derivePlanStatus([req("completed"), req("inprogress")])).toBe("running");
    expect(derivePlanStatus([req("error"), opt("ready")])).toBe("running");
  });

  it("is completed when required tasks are completed or skipped and optional ones settled", () => {
    expect(derivePlanStatus([req("completed"), req("skipped")])).toBe("completed");
    expect(derivePlanStatus([req("completed"), opt("error")])).toBe("completed");
    expect(derivePlanStatus([req("completed"), opt("skipped")])).toBe("completed");
  });

  it("is error when everything settled and a required task is in error", () => {
    expect(derivePlanStatus([req("completed"), req("error")])).toBe("error");
    expect(derivePlanStatus([req("error"), opt("completed")])).toBe("error");
  });
});
