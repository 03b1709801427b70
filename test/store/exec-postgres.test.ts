/**
 * `runtime exec --store postgres://...` keeps the whole run in PostgreSQL:
 * nothing is written under the trace directory, neither the default
 * `.runtime` of the working directory nor a `--trace-dir` given
 * (docs/scale-out.md#stores).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createStore } from "../../src/store/create.js";
import { ROOT, runCli } from "../support/cli.js";
import { startPostgres, type TestPostgres } from "../support/postgres.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const CIRCLE = "What are the area and circumference of a circle with radius 5 meters?";

let postgres: TestPostgres;
let cwd: string;
beforeAll(async () => {
  postgres = await startPostgres();
  cwd = mkdtempSync(join(tmpdir(), "exec-pg-"));
});
afterAll(() => {
  rmSync(cwd, { recursive: true, force: true });
  return postgres?.stop();
});

describe("runtime exec --store postgres://", () => {
  it("writes nothing under the trace directory: runs, plans, todo lists and the session's turns all go to PostgreSQL", async () => {
    const url = await postgres.createDatabase("exec");
    const traceDir = join(cwd, "traces");
    const env = { RUNTIME_TRACE_DIR: undefined, RUNTIME_STORE_URL: undefined };
    // plan_and_solve in a named session: todo list and conversation; the SOP team: Plan Tool plans.
    const planned = await runCli(["exec", join(ROOT, "teams", "circle-plan.yaml"), CIRCLE, "--store", url, "--session", "chat"], { cwd, env });
    expect(planned.stderr).toBe("");
    expect(planned.code).toBe(0);
    const sop = await runCli(
      ["exec", join(ROOT, "teams", "safety-sop.yaml"), "Review: raise the boiler pressure limit from 8 to 10 bar", "--store", url, "--trace-dir", traceDir],
      { cwd, env },
    );
    expect(sop.code).toBe(0);
    expect(existsSync(traceDir)).toBe(false);
    expect(readdirSync(cwd)).toEqual([]);

    const store = await createStore(url);
    try {
      const runs = await store.runs.listRuns();
      expect(runs.map((r) => r.result_type)).toEqual(["answer", "answer"]);
      expect((await store.runs.listRuns({ session: "chat" })).map((r) => r.answer)).toEqual([planned.stdout.trim()]);
      expect((await store.conversations().load("chat")).turns.map((t) => t.input)).toEqual([CIRCLE]);
      expect(await store.planTool().list_plans()).toHaveLength(1);
    } finally {
      await store.close();
    }
  });
});
