/**
 * The `state.changed` events of the `plan_solver` (docs/design/plan-solver-design.md) and `sop`
 * (docs/design/plan-tool-design.md) machines, on teams run through the real `openai` client and the
 * test server: every state in order (`via` expanded), each before the work
 * it starts.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../../src/config/load.js";
import { runTeam } from "../../../src/engine/run-team.js";
import type { RunEvent } from "../../../src/events/types.js";
import { closePlanTool } from "../../../src/store/sqlite/store.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../../support/team.js";
import { answer, badRequest, makeTeam, ofType, roleOf, runAll, solverFlow, traceDir } from "../../support/flows.js";

const servers: OpenAIServer[] = [];
const dirs: string[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
  while (dirs.length) closePlanTool(dirs.pop() as string);
});

async function serve(respond: (body: ChatBody) => Reply): Promise<string> {
  const server = await startOpenAIServer({ respond });
  servers.push(server);
  return server.url;
}

/** The states one machine walked, transient ones (`via`) included; checks that each event starts where the last ended. */
function walk(events: RunEvent[], machine: string): string[] {
  const changes = ofType(events, "state.changed").filter((e) => e.machine === machine);
  changes.forEach((e, i) => {
    expect(e.from).toBe(i === 0 ? "(start)" : changes[i - 1]?.to);
  });
  return changes.flatMap((e) => [...(e.via ?? []), e.to]);
}

/** The machine's states interleaved with the child agents it starts and the plan events, in event order. */
function timeline(events: RunEvent[], machine: string, self: string): string[] {
  return events.flatMap((e) => {
    if (e.type === "state.changed" && e.machine === machine) return [...(e.via ?? []), e.to];
    if (e.type === "agent.started" && e.agent_id !== self && e.parent_step_id !== undefined) return [`start ${e.agent_id}`];
    if (e.type === "plan.created") return ["plan.created"];
    return [];
  });
}

describe("plan_solver states (docs/design/plan-solver-design.md)", () => {
  const plan = (n: number) => answer(JSON.stringify({ steps: Array.from({ length: n }, (_, i) => `task ${i + 1}`) }));

  it("walks PLAN → SOLVE → AGGREGATE → DONE, each state before the agents it runs", async () => {
    const url = await serve((body) => {
      const role = roleOf(body);
      return role === "planner" ? plan(2) : answer(`${role} done`);
    });
    const team = makeTeam(url, solverFlow({ concurrency: 1 }), ["planner", "solver", "aggregator"]);
    const { result, events } = await runAll(team, { input: "two things", traceDir: traceDir() });

    expect(result).toMatchObject({ result_type: "answer", answer: "aggregator done" });
    expect(walk(events, "plan_solver")).toEqual(["INIT", "PLAN", "SOLVE", "AGGREGATE", "DONE"]);
    // Only agents started directly by the pipeline step count here (the solvers' own children would not).
    const pipeline = ofType(events, "agent.started").find((e) => e.agent_id === "pipeline")?.step_id;
    const own = events.filter((e) => e.type !== "agent.started" || e.agent_id === "pipeline" || e.parent_step_id === pipeline);
    expect(timeline(own, "plan_solver", "pipeline")).toEqual([
      "INIT",
      "PLAN",
      "start planner",
      "plan.created",
      "SOLVE",
      "start solver",
      "start solver",
      "AGGREGATE",
      "start aggregator",
      "DONE",
    ]);
    expect(events.findIndex((e) => e.type === "state.changed" && e.machine === "plan_solver" && e.to === "DONE")).toBeLessThan(
      events.findIndex((e) => e.type === "agent.finished" && e.agent_id === "pipeline"),
    );
  });

  it("without an aggregator passes through JOIN to DONE", async () => {
    const url = await serve((body) => (roleOf(body) === "planner" ? plan(2) : answer("solved")));
    const team = makeTeam(url, solverFlow({ aggregator: undefined }), ["planner", "solver"]);
    const { result, events } = await runAll(team, { input: "two things", traceDir: traceDir() });

    expect(result.result_type).toBe("answer");
    expect(walk(events, "plan_solver")).toEqual(["INIT", "PLAN", "SOLVE", "JOIN", "DONE"]);
    const done = ofType(events, "state.changed").find((e) => e.machine === "plan_solver" && e.to === "DONE");
    expect(done).toMatchObject({ from: "SOLVE", via: ["JOIN"] });
  });

  it("ends in FAILED from JOIN when every solver failed", async () => {
    const url = await serve((body) => (roleOf(body) === "planner" ? plan(2) : badRequest("solver down")));
    const team = makeTeam(url, solverFlow({ aggregator: undefined }), ["planner", "solver"]);
    const { result, events } = await runAll(team, { input: "two things", traceDir: traceDir() });

    expect(result.error?.message).toMatch(/^all 2 runs of solver 'solver' failed; the first: /);
    expect(walk(events, "plan_solver")).toEqual(["INIT", "PLAN", "SOLVE", "JOIN", "FAILED"]);
  });

  it("ends in FAILED from PLAN when the planner gives no plan", async () => {
    const url = await serve(() => answer("no plan here"));
    const team = makeTeam(url, solverFlow(), ["planner", "solver", "aggregator"]);
    const { result, events } = await runAll(team, { input: "?", traceDir: traceDir() });

    expect(result.result_type).toBe("error");
    expect(walk(events, "plan_solver")).toEqual(["INIT", "PLAN", "FAILED"]);
  });
});

describe("sop states (docs/design/plan-tool-design.md)", () => {
  /** A sop team on the test server: `worker` does t1; t2 is optional. */
  function sopTeam(url: string): string {
    return writeTeam(`version: 1
name: sop-states
entry: review
models:
  default: { provider: openai, model: test-model, base_url: "${url}", api_key: sk-test, timeout_ms: 5000, max_retries: 0 }
agents:
  review: { kind: sop, workflow: W, strategist: strategist }
  strategist:
    kind: react
    max_iteration: 8
    tools: [update_task_status, worker]
  worker: { kind: react, description: Does one task. }
workflows:
  W:
    name: Two tasks
    steps:
      - step_id: s1
        name: Only
        tasks:
          - { task_id: t1, name: First, assignee: worker, description: Do the first thing. }
          - { task_id: t2, name: Second, assignee: worker, description: Do the second thing., optional: true }
`);
  }

  /** Replies by the agent that asks (react prompts start "You are NAME"); `n` counts that agent's requests. */
  function byAgent(handlers: Record<string, (n: number) => Reply>): (body: ChatBody) => Reply {
    const counts = new Map<string, number>();
    return (body) => {
      const system = String(body.messages?.find((m) => m.role === "system")?.content ?? "");
      const agent = /^You are (\w+)/.exec(system)?.[1] ?? "?";
      const n = counts.get(agent) ?? 0;
      counts.set(agent, n + 1);
      return handlers[agent]?.(n) ?? badRequest(`no handler for ${agent}`);
    };
  }

  const call = (name: string, args: Record<string, unknown>): Reply => ({
    content: reactReply("CALL_TOOL", {}),
    tool_calls: [{ id: `c_${name}_${Math.random().toString(36).slice(2, 8)}`, name, arguments: args }],
  });
  const done = (text: string): Reply => ({ content: reactReply("ANSWER", { answer: text }) });

  async function runSop(url: string) {
    const dir = tempDir("sop-states-");
    dirs.push(dir);
    const events: RunEvent[] = [];
    const result = await runTeam(await loadTeam(sopTeam(url)), { input: "Do the two tasks", traceDir: dir, sinks: [(e) => events.push(e)] }).result;
    return { result, events };
  }

  it("walks CREATE_PLAN → CHECK_PLAN → DRIVE, and DRIVE again while the plan runs, to DONE", async () => {
    // The first round answers with t1 still open; the reminder round finishes the plan.
    const strategist = [
      done("Started."),
      call("update_task_status", { task_id: "t1", status: "inprogress" }),
      call("worker", { query: "Do t1" }),
      call("update_task_status", { task_id: "t1", status: "completed", result_summary: "t1 done" }),
      call("update_task_status", { task_id: "t2", status: "skipped" }),
      done("All done."),
    ];
    const url = await serve(byAgent({ strategist: (n) => strategist[n] ?? done("?"), worker: () => done("t1 result") }));
    const { result, events } = await runSop(url);

    expect(result.result_type, result.error?.message).toBe("answer");
    expect(result.answer).toMatch(/^All done\.\n\nplan W-/);
    expect(walk(events, "sop")).toEqual(["INIT", "CREATE_PLAN", "CHECK_PLAN", "DRIVE", "CHECK_PLAN", "DRIVE", "CHECK_PLAN", "DONE"]);
    expect(
      timeline(
        events.filter((e) => e.type !== "agent.started" || e.agent_id === "strategist"),
        "sop",
        "review",
      ),
    ).toEqual([
      "INIT",
      "CREATE_PLAN",
      "plan.created",
      "CHECK_PLAN",
      "DRIVE",
      "start strategist",
      "CHECK_PLAN",
      "DRIVE",
      "start strategist",
      "CHECK_PLAN",
      "DONE",
    ]);
  });

  it("ends in FAILED from CHECK_PLAN when the strategist answers every round with the plan still running", async () => {
    const url = await serve(byAgent({ strategist: () => done("Done, I think.") }));
    const { result, events } = await runSop(url);

    expect(result.error?.message.split("\n")[0]).toMatch(/^strategist strategist answered 3 times while plan W-\S+ was still running/);
    expect(walk(events, "sop")).toEqual(["INIT", "CREATE_PLAN", "CHECK_PLAN", "DRIVE", "CHECK_PLAN", "DRIVE", "CHECK_PLAN", "DRIVE", "CHECK_PLAN", "FAILED"]);
  });
});
