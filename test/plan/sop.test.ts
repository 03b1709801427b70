import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import type { RunEvent } from "../../src/events/types.js";
import { closePlanTool, openPlanTool } from "../../src/store/sqlite/store.js";
import { runTeam } from "../../src/engine/run-team.js";
import { ROOT } from "../support/cli.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const dirs: string[] = [];
const servers: OpenAIServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
  while (dirs.length) closePlanTool(dirs.pop() as string);
});

function traceDir(): string {
  const dir = tempDir("sop-test-");
  dirs.push(dir);
  return dir;
}

async function run(teamFile: string, input: string, dir: string) {
  const events: RunEvent[] = [];
  const team = await loadTeam(teamFile);
  const result = await runTeam(team, { input, traceDir: dir, sinks: [(e) => events.push(e)] }).result;
  return { result, events };
}

const statusEvents = (events: RunEvent[]) => events.filter((e): e is Extract<RunEvent, { type: "task.status" }> => e.type === "task.status");

describe("the safety-sop example on the scripted model", () => {
  it("drives the plan to completed through the plan tools and the assignee agents", async () => {
    const dir = traceDir();
    const { result, events } = await run(join(ROOT, "teams/safety-sop.yaml"), "Review: raise the boiler pressure limit from 8 to 10 bar", dir);
    expect(result.result_type).toBe("answer");
    expect(result.answer).toMatch(/^Safety review finished \(plan completed\): Rejected as proposed/);
    expect(result.answer).toContain("[skipped] t3 Compare past incidents → analyst (optional)");
    // The risk score in the report is what the reviewer's calculator computed.
    expect(result.answer).toContain("↳ Risk score 12 of 25");

    const plans = await openPlanTool(dir).list_plans();
    expect(plans).toHaveLength(1);
    const plan = await openPlanTool(dir).get_plan_structure(plans[0]?.plan_id ?? "");
    expect(plan?.status).toBe("completed");
    expect(plan?.revision).toBe(9);
    expect(plan?.steps.flatMap((s) => s.tasks.map((t) => `${t.task_id}:${t.status}`))).toEqual([
      "t1:completed",
      "t2:completed",
      "t3:skipped",
      "t4:completed",
      "t5:completed",
    ]);
    expect(plan?.steps[0]?.tasks[0]?.result_summary).toMatch(/rated for 12 bar/);

    // Creation events come from the sop step; every change from the strategist's tool calls.
    const statuses = statusEvents(events);
    expect(statuses.slice(0, 5).every((e) => e.agent_id === "review" && e.status === "ready")).toBe(true);
    expect(statuses.slice(5).every((e) => e.agent_id === "strategist")).toBe(true);
    expect(statuses).toHaveLength(5 + 9);
    expect(statuses.at(-1)).toMatchObject({ plan_task_id: "t5", status: "completed", plan_status: "completed" });
    expect(new Set(statuses.map((e) => e.plan_id))).toEqual(new Set([plan?.plan_id]));

    // The assignees ran as children of the strategist's step.
    const started = events.filter((e) => e.type === "agent.started");
    const strategist = started.find((e) => e.agent_id === "strategist");
    const children = started.filter((e) => e.parent_step_id === strategist?.step_id).map((e) => e.agent_id);
    expect(children.sort()).toEqual(["analyst", "analyst", "reviewer", "reviewer"]);
    expect(events.find((e) => e.type === "plan.created")).toMatchObject({ agent_id: "review" });
  });
});

describe("sop runs sharing a process", () => {
  it("run concurrently on one trace dir, each on its own plan", async () => {
    const dir = traceDir();
    const team = await loadTeam(join(ROOT, "teams/safety-sop.yaml"));
    const runs = await Promise.all(
      [1, 2, 3].map(async (i) => {
        const events: RunEvent[] = [];
        const result = await runTeam(team, { input: `Review ${i}`, traceDir: dir, sinks: [(e) => events.push(e)] }).result;
        return { result, planIds: new Set(statusEvents(events).map((e) => e.plan_id)) };
      }),
    );
    expect(runs.map((r) => r.result.result_type)).toEqual(["answer", "answer", "answer"]);
    expect(runs.every((r) => r.planIds.size === 1)).toBe(true);
    const ids = runs.map((r) => [...r.planIds][0]);
    expect(new Set(ids).size).toBe(3);
    const plans = await openPlanTool(dir).list_plans();
    expect(plans.map((p) => p.plan_id).sort()).toEqual([...ids].sort());
    expect(plans.every((p) => p.status === "completed" && p.tasks_done === 5)).toBe(true);
  });
});

/** A team whose agents reach the test server; `worker` does the tasks, t2 is optional. */
function serverTeam(url: string): string {
  return writeTeam(`version: 1
name: sop-server
entry: review
models:
  default: { provider: openai, model: test-model, base_url: "${url}", api_key: sk-test, timeout_ms: 5000, max_retries: 0 }
agents:
  review: { kind: sop, workflow: W, strategist: strategist }
  strategist:
    kind: react
    max_iteration: 12
    tools: [get_plan_structure, get_plan_status, update_task_status, get_ready_tasks, worker]
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

type Handler = (n: number, body: ChatBody) => Reply;

/** Answer each request by the agent that sent it (react prompts start "You are NAME"); `n` counts that agent's requests. */
async function serverByAgent(handlers: Record<string, Handler>): Promise<OpenAIServer> {
  const counts = new Map<string, number>();
  const server = await startOpenAIServer({
    respond(body) {
      const system = String(body.messages?.find((m) => m.role === "system")?.content ?? "");
      const agent = /^You are (\w+)/.exec(system)?.[1] ?? "?";
      const n = counts.get(agent) ?? 0;
      counts.set(agent, n + 1);
      const handler = handlers[agent];
      if (!handler) return { status: 400, error: { message: `no handler for ${agent}` } };
      return handler(n, body);
    },
  });
  servers.push(server);
  return server;
}

const call = (name: string, args: Record<string, unknown>, id = `c_${name}_${Math.random().toString(36).slice(2, 8)}`): Reply => ({
  content: reactReply("CALL_TOOL", {}),
  tool_calls: [{ id, name, arguments: args }],
});
const answer = (text: string): Reply => ({ content: reactReply("ANSWER", { answer: text }) });
/** The plan_id, as a real model would read it from the strategist's request. */
const planIdOf = (body: ChatBody) => /Plan: (\S+)/.exec(String(body.messages?.[0]?.content))?.[1] ?? "missing";
const lastToolResult = (body: ChatBody) => String(body.messages?.at(-1)?.content ?? "");

describe("sop runs through the real openai client and the test server", () => {
  it("shows a failed task, lets the strategist retry it and completes", async () => {
    const server = await serverByAgent({
      strategist: (n, body) => {
        const plan_id = planIdOf(body);
        switch (n) {
          case 0:
            return call("update_task_status", { plan_id, task_id: "t1", status: "inprogress" });
          case 1:
            return call("worker", { query: "Do t1" });
          case 2:
            expect(lastToolResult(body)).toMatch(/agent worker failed/);
            return call("update_task_status", { plan_id, task_id: "t1", status: "error", result_summary: "worker unavailable" });
          case 3:
            return call("update_task_status", { plan_id, task_id: "t1", status: "inprogress" });
          case 4:
            return call("worker", { query: "Do t1 again" });
          case 5:
            return call("update_task_status", { plan_id, task_id: "t1", status: "completed", result_summary: "t1 done on retry" });
          case 6:
            return call("update_task_status", { plan_id, task_id: "t2", status: "skipped", result_summary: "not needed" });
          default:
            return answer("All done.");
        }
      },
      // The first request fails (max_retries 0), so the worker's step, and the tool call, fail.
      worker: (n) => (n === 0 ? { status: 500, error: { message: "overloaded" } } : answer("t1 result")),
    });
    const dir = traceDir();
    const { result, events } = await run(serverTeam(server.url), "Do the two tasks", dir);
    expect(result.result_type, result.error?.message).toBe("answer");
    expect(result.answer).toContain("All done.");
    expect(result.answer).toContain("[completed] t1 First → worker");
    expect(result.answer).toContain("↳ t1 done on retry");
    expect(result.answer).toContain("[skipped] t2 Second → worker (optional)");
    const t1 = statusEvents(events)
      .filter((e) => e.plan_task_id === "t1")
      .map((e) => `${e.status}/${e.plan_status}`);
    expect(t1).toEqual(["ready/running", "inprogress/running", "error/running", "inprogress/running", "completed/running"]);
    expect(statusEvents(events).at(-1)).toMatchObject({ plan_task_id: "t2", status: "skipped", plan_status: "completed" });
    // The strategist was offered exactly its allow-list.
    const strategistTools = (server.chatRequests[0]!.body!.tools as { function: { name: string } }[]).map((t) => t.function.name);
    expect(strategistTools.sort()).toEqual(["get_plan_status", "get_plan_structure", "get_ready_tasks", "update_task_status", "worker"]);
  });

  it("lets the strategist retry a failed task, then skip it: the plan completes and the report keeps why", async () => {
    const server = await serverByAgent({
      strategist: (n) => {
        const steps: Reply[] = [
          call("update_task_status", { task_id: "t1", status: "inprogress" }),
          call("worker", { query: "Do t1" }),
          call("update_task_status", { task_id: "t1", status: "error", result_summary: "worker failed" }),
          call("update_task_status", { task_id: "t1", status: "inprogress" }),
          call("worker", { query: "Do t1 again" }),
          call("update_task_status", { task_id: "t1", status: "error", result_summary: "worker failed twice; skipping" }),
          call("update_task_status", { task_id: "t1", status: "skipped" }),
          call("update_task_status", { task_id: "t2", status: "skipped", result_summary: "not needed" }),
        ];
        return steps[n] ?? answer("t1 skipped after two failures.");
      },
      worker: () => ({ status: 500, error: { message: "overloaded" } }),
    });
    const dir = traceDir();
    const { result, events } = await run(serverTeam(server.url), "Do the two tasks", dir);
    expect(result.result_type, result.error?.message).toBe("answer");
    expect(result.answer).toContain("[skipped] t1 First → worker");
    // Skipping without a new summary keeps the last one, so the report still says why.
    expect(result.answer).toContain("↳ worker failed twice; skipping");
    const t1 = statusEvents(events)
      .filter((e) => e.plan_task_id === "t1")
      .map((e) => e.status);
    expect(t1).toEqual(["ready", "inprogress", "error", "inprogress", "error", "skipped"]);
    expect((await openPlanTool(dir).list_plans())[0]?.status).toBe("completed");
  });

  it("ends in error when a required task ends in error, naming it; an optional one in error is tolerated", async () => {
    const server = await serverByAgent({
      strategist: (n, body) => {
        const plan_id = planIdOf(body);
        const steps: Reply[] = [
          call("update_task_status", { plan_id, task_id: "t1", status: "inprogress" }),
          call("update_task_status", { plan_id, task_id: "t1", status: "error", result_summary: "disk full\nmore detail" }),
          call("update_task_status", { plan_id, task_id: "t2", status: "inprogress" }),
          call("update_task_status", { plan_id, task_id: "t2", status: "error", result_summary: "optional failure" }),
        ];
        return steps[n] ?? answer("I could not finish t1.");
      },
    });
    const dir = traceDir();
    const { result } = await run(serverTeam(server.url), "Do the two tasks", dir);
    expect(result.result_type).toBe("error");
    const [first, ...rest] = (result.error?.message ?? "").split("\n");
    expect(first).toMatch(/^plan W-\S+ ended in error: task t1 \(disk full\) failed$/);
    expect(rest.join("\n")).toContain("[error] t2 Second → worker (optional)");
    expect(rest.join("\n")).toContain("I could not finish t1.");
    const plans = await openPlanTool(dir).list_plans();
    expect(plans[0]?.status).toBe("error");
  });

  it("reminds a strategist that answers early, then ends in error listing the open tasks", async () => {
    const inputs: string[] = [];
    const server = await serverByAgent({
      strategist: (n, body) => {
        inputs.push(String(body.messages?.[0]?.content));
        // Starts t1 in its first run, then keeps answering without finishing.
        return n === 0 ? call("update_task_status", { task_id: "t1", status: "inprogress" }) : answer("Done, I think.");
      },
    });
    const dir = traceDir();
    const { result, events } = await run(serverTeam(server.url), "Do the two tasks", dir);
    expect(result.result_type).toBe("error");
    expect(result.error?.message.split("\n")[0]).toMatch(
      /^strategist strategist answered 3 times while plan W-\S+ was still running; open tasks: t1 \(inprogress\), t2 \(ready\)$/,
    );
    expect(events.filter((e) => e.type === "agent.started" && e.agent_id === "strategist")).toHaveLength(3);
    expect(inputs[0]).not.toContain("Still open");
    expect(inputs.at(-1)).toContain("Still open: t1 (inprogress), t2 (ready)");
    // Without plan_id, the tool worked on the run's own plan.
    expect(result.error?.message).toContain("[inprogress] t1 First → worker");
  });

  it.each([
    [
      "an assignee",
      "[get_plan_status, update_task_status]",
      /^strategist strategist cannot drive workflow W: its tools lack worker \(the assignee of t1, t2\)$/,
    ],
    ["update_task_status", "[get_plan_status, worker]", /^strategist strategist cannot drive workflow W: its tools lack update_task_status$/],
  ])("fails at once, before any model call or plan, when the strategist's tools lack %s", async (_what, tools, message) => {
    const server = await serverByAgent({ strategist: () => answer("never asked") });
    const yaml = readFileSync(serverTeam(server.url), "utf8").replace(/^(\s+)tools: \[get_plan_structure.*\]$/m, `$1tools: ${tools}`);
    expect(yaml).toContain(`tools: ${tools}`);
    const team = await loadTeam(writeTeam(yaml));
    const dir = traceDir();
    const result = await runTeam(team, { input: "Do the two tasks", traceDir: dir }).result;
    expect(result.result_type).toBe("error");
    expect(result.error?.message).toMatch(message);
    expect(server.chatRequests).toHaveLength(0);
    expect(await openPlanTool(dir).list_plans()).toEqual([]);
  });

  it("stops when interrupted, leaving the plan stored as it was", async () => {
    const controller = new AbortController();
    const server = await serverByAgent({
      strategist: (n) => {
        if (n === 0) return call("update_task_status", { task_id: "t1", status: "inprogress" });
        setTimeout(() => controller.abort(), 50);
        return { ...answer("never seen"), delay_ms: 60_000 };
      },
    });
    const dir = traceDir();
    const team = await loadTeam(serverTeam(server.url));
    const started = Date.now();
    const result = await runTeam(team, { input: "Do the two tasks", traceDir: dir, signal: controller.signal }).result;
    // Stopped at the abort, not when the reply came a minute later: a bound that only catches a hang.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result.result_type).toBe("error");
    expect(result.error?.message.split("\n")[0]).toBe("interrupted");
    const [plan] = await openPlanTool(dir).list_plans();
    expect(plan).toMatchObject({ status: "running", tasks_done: 0 });
    expect((await openPlanTool(dir).get_task(plan?.plan_id ?? "", "t1"))?.status).toBe("inprogress");
  });
});
