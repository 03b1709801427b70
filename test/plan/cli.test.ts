import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { BIN, ROOT, runCli } from "../support/cli.js";
import { startOpenAIServer, type ChatBody, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

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

describe("runtime plan after a sop run was killed with SIGKILL", () => {
  it("shows every update made before the kill, the plan still running, and the run to look at", async () => {
    const counts = new Map<string, number>();
    const call = (name: string, args: Record<string, unknown>): Reply => ({
      content: reactReply("CALL_TOOL", {}),
      tool_calls: [{ id: `c${counts.get("strategist")}`, name, arguments: args }],
    });
    const model = await startOpenAIServer({
      respond(body: ChatBody) {
        const system = String(body.messages?.find((m) => m.role === "system")?.content ?? "");
        const agent = /^You are (\w+)/.exec(system)?.[1] ?? "?";
        const n = counts.get(agent) ?? 0;
        counts.set(agent, n + 1);
        if (agent === "worker") return { content: reactReply("ANSWER", { answer: "t1 result" }) };
        const steps: Reply[] = [
          call("update_task_status", { task_id: "t1", status: "inprogress" }),
          call("worker", { query: "Do t1" }),
          call("update_task_status", { task_id: "t1", status: "completed", result_summary: "t1 result" }),
          call("update_task_status", { task_id: "t2", status: "inprogress" }),
        ];
        // After that the model hangs: the process is killed while it waits.
        return steps[n] ?? { content: reactReply("ANSWER", { answer: "late" }), delay_ms: 60_000 };
      },
    });
    try {
      const team = writeTeam(`version: 1
name: sop-kill
entry: review
models:
  default: { provider: openai, model: test-model, base_url: "${model.url}", api_key: sk-test, timeout_ms: 90000, max_retries: 0 }
agents:
  review: { kind: sop, workflow: W, strategist: strategist }
  strategist: { kind: react, tools: [update_task_status, worker] }
  worker: { kind: react, description: Does one task. }
workflows:
  W:
    name: Two tasks
    steps:
      - step_id: s1
        name: Only
        tasks:
          - { task_id: t1, name: First, assignee: worker, description: Do the first thing. }
          - { task_id: t2, name: Second, assignee: worker, description: Do the second thing. }
`);
      const traces = tempDir("plan-kill-");
      const child = spawn(process.execPath, [BIN, "exec", team, "Do the two tasks", "--events", "ndjson", "--trace-dir", traces], {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("close", (_code, signal) => resolve(signal)));
      let stdout = "";
      let taskId = "";
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`t2 never started:\n${stdout}`)), 30_000);
        child.stdout.on("data", (d: Buffer) => {
          stdout += d.toString();
          taskId ||= /"task_id":"([0-9a-f-]{36})"/.exec(stdout)?.[1] ?? "";
          if (/"plan_task_id":"t2","status":"inprogress"/.test(stdout)) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");

      const show = await runCli(["plan", "show", "W-", "--trace-dir", traces]);
      expect(show.code, show.stderr).toBe(0);
      const lines = show.stdout.split("\n");
      expect(lines[0]).toMatch(/^plan W-\S+ "Two tasks" \(W\) \[running\]$/);
      expect(lines).toContain("   ├─ [completed] t1 First → worker");
      expect(lines).toContain("   │     ↳ t1 result");
      expect(lines).toContain("   └─ [inprogress] t2 Second → worker");
      expect(lines.at(-2)).toBe(`made by run ${taskId}: runtime trace ${taskId}`);

      const trace = await runCli(["trace", taskId, "--trace-dir", traces]);
      expect(trace.code, trace.stderr).toBe(0);
      expect(trace.stdout.split("\n")[0]).toMatch(/unfinished/);
    } finally {
      await model.close();
    }
  }, 90_000);
});
