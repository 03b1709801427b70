import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";

// Spawns the built CLI: `npm run build` first.
describe("runtime plan (after runtime exec of the safety-sop team)", () => {
  it("lists the run's plan and shows it as a tree; unknown plans exit 1", async () => {
    const traces = tempDir("plan-cli-");
    const exec = await runCli(["exec", "teams/safety-sop.yaml", "Review: raise the boiler limit to 10 bar", "--trace-dir", traces]);
    expect(exec.code, exec.stderr).toBe(0);
    expect(exec.stdout).toContain("[completed] t5 Write verdict → reviewer");

    const list = await runCli(["plan", "list", "--trace-dir", traces]);
    expect(list.code).toBe(0);
    const [line, ...more] = list.stdout.trim().split("\n");
    expect(more).toEqual([]);
    const [planId, status, done, , , runId] = (line ?? "").split("\t");
    expect(planId).toMatch(/^SAFE_SOP_v9-\d{8}T\d{6}Z-[0-9a-f]{12}$/);
    expect([status, done]).toEqual(["completed", "5/5 done"]);
    // The plan names the run that made it, so its trace can be found from the plan.
    const runs = await runCli(["trace", "--agent", "review", "--trace-dir", traces]);
    const taskId = /^([0-9a-f-]{36})\s/m.exec(runs.stdout)?.[1];
    expect(taskId, runs.stdout).toBeDefined();
    expect(runId).toBe(taskId);

    // RUNTIME_TRACE_DIR works like --trace-dir, and a unique prefix is enough.
    const show = await runCli(["plan", "show", (planId ?? "").slice(0, 20)], { env: { RUNTIME_TRACE_DIR: traces } });
    expect(show.code, show.stderr).toBe(0);
    const tree = show.stdout.split("\n");
    expect(tree[0]).toBe(`plan ${planId} "Safety review" (SAFE_SOP_v9) [completed]`);
    expect(tree).toContain("├─ step s1 Analyze [completed]");
    expect(tree).toContain("│  └─ [skipped] t3 Compare past incidents → analyst (optional)");
    expect(tree).toContain("└─ step s3 Decide [completed]");
    expect(tree.at(-2)).toBe(`made by run ${taskId}: runtime trace ${taskId}`);

    const json = await runCli(["plan", "show", planId ?? "", "--json", "--trace-dir", traces]);
    expect(JSON.parse(json.stdout)).toMatchObject({ plan_id: planId, status: "completed", revision: 9, run_task_id: taskId });

    const missing = await runCli(["plan", "show", "nope", "--trace-dir", traces]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("runtime plan show: no plan nope\n");
  }, 120_000);

  it("exits 1 with one line when the trace directory holds no plans, creating nothing", async () => {
    const empty = tempDir("plan-cli-empty-");
    const list = await runCli(["plan", "list", "--trace-dir", `${empty}/absent`]);
    expect(list.code).toBe(1);
    expect(list.stderr).toBe(`runtime plan list: no plans in ${empty}/absent\n`);
    const show = await runCli(["plan", "show", "x", "--trace-dir", empty]);
    expect(show.code).toBe(1);
    expect(show.stderr.split("\n")).toHaveLength(2);
  }, 60_000);
});
