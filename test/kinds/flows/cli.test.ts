import { spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BIN, ROOT, runCli } from "../../support/cli.js";
import { type OpenAIServer, startOpenAIServer } from "../../support/openai-server.js";
import { answer, badRequest, roleOf } from "../../support/flows.js";

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe("flows through the CLI (npm run build first)", () => {
  it("runs the research-flow example offline: the answer alone on stdout", async () => {
    const traces = mkdtempSync(join(tmpdir(), "flows-cli-"));
    const r = await runCli([
      "exec",
      "teams/research-flow.yaml",
      "What are the area and circumference of a circle with radius 5 meters?",
      "--trace-dir",
      traces,
    ]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("A circle of radius 5 m has an area of 78.54 m² and a circumference of 31.42 m.\n");
  });

  it("streams the plan_solver example as NDJSON, children linked to the pipeline step", async () => {
    const traces = mkdtempSync(join(tmpdir(), "flows-cli-"));
    const r = await runCli([
      "exec",
      "teams/plan-solver.yaml",
      "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.",
      "--events",
      "ndjson",
      "--trace-dir",
      traces,
    ]);
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const pipeline = events.find((e) => e.type === "agent.started" && e.agent_id === "pipeline");
    const solvers = events.filter((e) => e.type === "agent.started" && e.agent_id === "solver");
    expect(solvers).toHaveLength(4);
    for (const s of solvers) expect(s.parent_step_id).toBe(pipeline?.step_id);
    expect(events.find((e) => e.type === "plan.created")?.steps).toHaveLength(4);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer" });
    expect(String(events.at(-1)?.answer)).toContain("523.6");
  });

  it("draws the flow's composition and machine", async () => {
    const r = await runCli(["graph", "teams/research-flow.yaml", "--agent", "research"]);
    expect(r.code).toBe(0);
    for (const line of ["PLAN --> EXECUTE", "EXECUTE --> REPLAN", "REPLAN --> SUMMARY", "research --> executor"]) {
      expect(r.stdout).toContain(line);
    }
  });

  it("Ctrl-C stops a plan_solver run with solvers in flight: exit 130, trace kept", async () => {
    server = await startOpenAIServer({
      respond(body) {
        const role = roleOf(body);
        if (role === "planner") return answer('{"steps": ["one", "two", "three"]}');
        if (role === "solver") return answer("late", 60_000);
        return badRequest("unexpected");
      },
    });
    const dir = mkdtempSync(join(tmpdir(), "flows-sigint-"));
    const file = join(dir, "team.yaml");
    writeFileSync(
      file,
      `version: 1
name: sigint
entry: pipeline
models:
  default: { provider: openai, model: test-model, base_url: "${server.url}", api_key: test-key, max_retries: 0 }
agents:
  pipeline: { kind: plan_solver, planner: planner, solver: solver, aggregator: aggregator, concurrency: 3 }
  planner: { kind: react, prompt: "ROLE:planner" }
  solver: { kind: react, prompt: "ROLE:solver" }
  aggregator: { kind: react, prompt: "ROLE:aggregator" }
`,
    );
    const traces = join(dir, "traces");
    const child = spawn(process.execPath, [BIN, "exec", file, "go", "--events", "ndjson", "--trace-dir", traces], {
      cwd: ROOT,
      env: { ...process.env, NO_COLOR: "1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let interruptedAt = 0;
    const code = await new Promise<number | null>((resolve) => {
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      // Interrupt once all three solvers have asked the model.
      const poll = setInterval(() => {
        if (server && server.chatRequests.filter((r) => r.body && roleOf(r.body) === "solver").length === 3) {
          clearInterval(poll);
          child.kill("SIGINT");
          interruptedAt = Date.now();
        }
      }, 20);
      const guard = setTimeout(() => child.kill("SIGKILL"), 15_000);
      child.on("close", (exit) => {
        clearInterval(poll);
        clearTimeout(guard);
        resolve(exit);
      });
    });
    expect(code).toBe(130);
    // The solvers' replies were a minute away: the run stopped without waiting for them.
    expect(interruptedAt).toBeGreaterThan(0);
    expect(Date.now() - interruptedAt).toBeLessThan(20_000);
    const events = stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const taskId = String(events[0]?.task_id);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", result_type: "error" });

    const trace = await runCli(["trace", taskId, "--trace-dir", traces]);
    expect(trace.code).toBe(0);
    expect(trace.stdout).toContain("solver");
  });
});
