import { afterEach, describe, expect, it } from "vitest";
import { TraceStore } from "../../../src/store/sqlite/trace-store.js";
import { type ChatBody, type OpenAIServer, type Reply, startOpenAIServer } from "../../support/openai-server.js";
import { answer, badRequest, makeTeam, ofType, queryOf, roleOf, runAll, solverFlow, traceDir } from "../../support/flows.js";

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function serve(routes: Record<string, (body: ChatBody) => Reply>): Promise<OpenAIServer> {
  server = await startOpenAIServer({
    respond(body) {
      const handler = routes[roleOf(body)];
      return handler ? handler(body) : badRequest(`no route for ${roleOf(body)}`);
    },
  });
  return server;
}

function requestsOf(role: string): ChatBody[] {
  return (server?.chatRequests ?? []).map((r) => r.body ?? {}).filter((b) => roleOf(b) === role);
}

const taskOf = (body: ChatBody) => /Your task is task \d+ of \d+: (.*)/.exec(queryOf(body))?.[1] ?? "?";
const plan = (n: number) => answer(JSON.stringify({ steps: Array.from({ length: n }, (_, i) => `task ${i + 1}`) }));

/** Wall time of the solver phase, from the first solver start to the last solver finish. */
function solverSpan(events: { type: string; agent_id: string; ts: string }[]): number {
  const solver = events.filter((e) => e.agent_id === "solver" && (e.type === "agent.started" || e.type === "agent.finished"));
  const times = solver.map((e) => Date.parse(e.ts));
  return Math.max(...times) - Math.min(...times);
}

describe("plan_solver", () => {
  it.each([
    { concurrency: 4, min: 450, max: 1300 },
    { concurrency: 1, min: 1950, max: 4000 },
  ])("runs 4 solvers delayed 500 ms with concurrency $concurrency between $min and $max ms", async ({ concurrency, min, max }) => {
    const { url } = await serve({
      planner: () => plan(4),
      solver: (body) => answer(`solved ${taskOf(body)}`, 500),
      aggregator: () => answer("aggregated"),
    });
    const team = makeTeam(url, solverFlow({ concurrency }), ["planner", "solver", "aggregator"]);
    const { result, events } = await runAll(team, { input: "Do four things", traceDir: traceDir() });

    expect(result).toMatchObject({ result_type: "answer", answer: "aggregated" });
    expect(requestsOf("solver")).toHaveLength(4);
    const span = solverSpan(events);
    expect(span).toBeGreaterThanOrEqual(min);
    expect(span).toBeLessThan(max);
  });

  it("never has more than `concurrency` solver requests in flight", async () => {
    let inFlight = 0;
    let peak = 0;
    const { url } = await serve({
      planner: () => plan(6),
      solver: (body) => {
        inFlight++;
        peak = Math.max(peak, inFlight);
        setTimeout(() => inFlight--, 150);
        return answer(`solved ${taskOf(body)}`, 150);
      },
    });
    const team = makeTeam(url, solverFlow({ concurrency: 2, aggregator: undefined }), ["planner", "solver"]);
    const { result } = await runAll(team, { input: "six things", traceDir: traceDir() });
    expect(result.result_type).toBe("answer");
    expect(peak).toBe(2);
  });

  it("reports a failing solver to the aggregator, with every output in plan order", async () => {
    const { url } = await serve({
      planner: () => plan(3),
      // Task 1 is the slowest, so plan order differs from finishing order.
      solver: (body) => {
        const task = taskOf(body);
        if (task === "task 2") return badRequest("solver quota exceeded");
        return answer(`result of ${task}`, task === "task 1" ? 300 : 0);
      },
      aggregator: () => answer("two of three done"),
    });
    const team = makeTeam(url, solverFlow(), ["planner", "solver", "aggregator"]);
    const { result, events } = await runAll(team, { input: "Three things", traceDir: traceDir() });

    expect(result).toMatchObject({ result_type: "answer", answer: "two of three done" });
    // Each solver that ends is reported done; task 1 ends last.
    const updates = ofType(events, "plan.updated");
    expect(updates.map((e) => e.finished)).toEqual([1, 2, 3]);
    expect(updates[1]?.done).toEqual([2, 3]);
    expect(updates.at(-1)?.done).toEqual([1, 2, 3]);
    expect(requestsOf("solver")).toHaveLength(3);
    const aggregated = requestsOf("aggregator").map(queryOf);
    expect(aggregated).toHaveLength(1);
    const query = aggregated[0]!;
    expect(query).toContain("The overall objective is:\nThree things");
    expect(query).toContain("The plan had 3 tasks, each solved separately; 1 failed.");
    expect(query).toContain("### Task 1: task 1\nStatus: completed\nResult:\nresult of task 1");
    expect(query).toMatch(/### Task 2: task 2\nStatus: FAILED\nError: .*solver quota exceeded/);
    expect(query).toContain("### Task 3: task 3\nStatus: completed\nResult:\nresult of task 3");
    expect(query.indexOf("### Task 1")).toBeLessThan(query.indexOf("### Task 2"));
    expect(query.indexOf("### Task 2")).toBeLessThan(query.indexOf("### Task 3"));
  });

  it("without an aggregator, answers with the solver outputs joined in plan order", async () => {
    const { url } = await serve({
      planner: () => plan(3),
      solver: (body) => answer(`result of ${taskOf(body)}`, taskOf(body) === "task 1" ? 200 : 0),
    });
    const team = makeTeam(url, solverFlow({ aggregator: undefined }), ["planner", "solver"]);
    const { result } = await runAll(team, { input: "Three things", traceDir: traceDir() });
    expect(result.answer).toBe("1. task 1\nresult of task 1\n\n2. task 2\nresult of task 2\n\n3. task 3\nresult of task 3");
  });

  it("gives each solver the objective, the plan and its own task", async () => {
    const { url } = await serve({ planner: () => plan(2), solver: (body) => answer(taskOf(body)) });
    const team = makeTeam(url, solverFlow({ aggregator: undefined }), ["planner", "solver"]);
    await runAll(team, { input: "Two things", traceDir: traceDir() });
    const queries = requestsOf("solver").map(queryOf).sort();
    expect(queries[0]).toBe(
      "The overall objective is:\nTwo things\n\nThe plan is:\n1. task 1\n2. task 2\n\nYour task is task 1 of 2: task 1\n\nSolve only this task, and answer with its result.",
    );
    expect(queries[1]).toContain("Your task is task 2 of 2: task 2");
  });

  it("fails clearly when the planner gives no valid plan after one repair", async () => {
    const { url } = await serve({ planner: () => answer("no idea"), solver: () => answer("x") });
    const team = makeTeam(url, solverFlow(), ["planner", "solver", "aggregator"]);
    const { result } = await runAll(team, { input: "?", traceDir: traceDir() });
    expect(result).toMatchObject({
      result_type: "error",
      error: { code: "PARSE_FAILED", message: "planner 'planner' gave no valid Plan, even after one repair: no JSON object found in the answer" },
    });
    expect(requestsOf("planner")).toHaveLength(2);
    expect(requestsOf("solver")).toHaveLength(0);
  });

  it("cancels the solvers in flight on abort, ends 'interrupted' and keeps the trace", async () => {
    const { url } = await serve({
      planner: () => plan(8),
      solver: () => answer("too late", 60_000),
      aggregator: () => answer("never"),
    });
    const dir = traceDir();
    const controller = new AbortController();
    const team = makeTeam(url, solverFlow({ concurrency: 4 }), ["planner", "solver", "aggregator"]);
    const started = Date.now();
    const run = runAll(team, {
      input: "eight slow things",
      traceDir: dir,
      signal: controller.signal,
      sinks: [(e) => e.type === "plan.created" && setTimeout(() => controller.abort(), 200)],
    });
    const { result, events } = await run;

    // The solvers in flight were cancelled, not waited out (their replies were a minute away).
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result).toMatchObject({ result_type: "error", error: { code: "ABORTED", message: "interrupted" }, interrupted: true });
    expect(requestsOf("solver")).toHaveLength(4);
    expect(requestsOf("aggregator")).toHaveLength(0);
    const solverEnds = ofType(events, "agent.finished").filter((e) => e.agent_id === "solver");
    expect(solverEnds).toHaveLength(4);
    expect(solverEnds.every((e) => e.result_type === "error")).toBe(true);

    const store = TraceStore.open(dir);
    try {
      const stored = store.eventsOfTask(result.task_id);
      expect(stored.filter((e) => e.type === "agent.started" && e.agent_id === "solver")).toHaveLength(4);
      expect(stored.at(-1)).toMatchObject({ type: "run.finished", result_type: "error", error: "interrupted" });
    } finally {
      store.close();
    }
  });
});
