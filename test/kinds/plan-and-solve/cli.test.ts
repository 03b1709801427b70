import { describe, expect, it } from "vitest";
import { runCli } from "../../support/cli.js";
import { tempDir } from "../../support/team.js";

// Spawns the built CLI: run `npm run build` first (npm test does).
const QUESTION = "What are the area and circumference of a circle with radius 5 meters?";

describe("runtime exec teams/circle-plan.yaml (offline)", () => {
  it("prints the answer alone on stdout and the todo list as it changes on stderr", async () => {
    const r = await runCli(["exec", "teams/circle-plan.yaml", QUESTION, "--progress", "--trace-dir", tempDir()]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n")).toHaveLength(1);
    expect(r.stdout).toMatch(/78\.54/);
    expect(r.stdout).toMatch(/31\.42/);
    for (const item of ["Look up the circle formulas", "Compute the area", "Compute the circumference", "Format the final answer"]) {
      expect(r.stderr).toContain(item);
    }
    expect(r.stderr).toContain("4/4");
  });

  it("streams versioned todo events as NDJSON", async () => {
    const r = await runCli(["exec", "teams/circle-plan.yaml", QUESTION, "--events", "ndjson", "--trace-dir", tempDir()]);
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { type: string; version?: number; to?: string });
    const versions = events.filter((e) => e.type.startsWith("todo.")).map((e) => e.version ?? 0);
    expect(versions.length).toBeGreaterThan(5);
    versions.slice(1).forEach((v, i) => {
      expect(v).toBeGreaterThan(versions[i] ?? 0);
    });
    expect(events.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer" });
  });

  it("draws both machines with runtime graph", async () => {
    const lifecycle = await runCli(["graph", "--machine", "plan_and_solve"]);
    expect(lifecycle.code).toBe(0);
    expect(lifecycle.stdout).toMatch(/^stateDiagram-v2/);
    expect(lifecycle.stdout).toContain("state VERIFYING");
    const task = await runCli(["graph", "--machine", "task"]);
    expect(task.code).toBe(0);
    expect(task.stdout).toContain("IN_PROGRESS --> BLOCKED");
  });
});
