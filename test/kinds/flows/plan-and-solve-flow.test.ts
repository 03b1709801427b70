import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { executorQuery } from "../../../src/kinds/plan-and-solve-flow/run.js";
import { TraceStore } from "../../../src/store/sqlite/trace-store.js";
import { type ChatBody, type OpenAIServer, type Reply, startOpenAIServer } from "../../support/openai-server.js";
import { runCli } from "../../support/cli.js";
import { tempDir, writeTeam } from "../../support/team.js";
import { answer, badRequest, flowAgent, makeTeam, ofType, queryOf, roleOf, runAll, traceDir } from "../../support/flows.js";

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

type Route = Record<string, (body: ChatBody, nth: number) => Reply>;

/** Start the test server answering each role with its handler; `nth` counts that role's requests from 0. */
async function serve(routes: Route): Promise<OpenAIServer> {
  const counts = new Map<string, number>();
  server = await startOpenAIServer({
    respond(body) {
      const role = roleOf(body);
      const nth = counts.get(role) ?? 0;
      counts.set(role, nth + 1);
      const handler = routes[role];
      return handler ? handler(body, nth) : badRequest(`no route for ${role}`);
    },
  });
  return server;
}

function requestsOf(role: string): ChatBody[] {
  return (server?.chatRequests ?? []).map((r) => r.body ?? {}).filter((b) => roleOf(b) === role);
}

/** The executor echoes which step it was asked to run. */
const executeEcho = (body: ChatBody) => answer(`done(${/The current step to execute is:(.*)/.exec(queryOf(body))?.[1] ?? "?"})`);

describe("plan_and_solve_flow", () => {
  it("runs a 3-step plan: the executor exactly 3 times, with the design's framing", async () => {
    const { url } = await serve({
      planner: () => answer('```json\n{"steps": ["find the radius", "compute the area", "round it"]}\n```'),
      executor: executeEcho,
    });
    const team = makeTeam(url, flowAgent(), ["planner", "executor", "replanner"]);
    const { result, events } = await runAll(team, { input: "Area of a circle of radius 5?", traceDir: traceDir() });

    expect(result).toMatchObject({ result_type: "answer", answer: "done(round it)" });
    const planner = requestsOf("planner");
    expect(planner).toHaveLength(1);
    expect(queryOf(planner[0]!)).toMatch(/^Area of a circle of radius 5\?\n\nAnswer with a single JSON object, a Plan/);
    expect(queryOf(planner[0]!)).toContain('"minItems": 1');

    const executed = requestsOf("executor").map(queryOf);
    expect(executed).toEqual([
      executorQuery("find the radius", ""),
      executorQuery("compute the area", "\ntask:find the radius, execute task result:done(find the radius)"),
      executorQuery(
        "round it",
        "\ntask:find the radius, execute task result:done(find the radius)\ntask:compute the area, execute task result:done(compute the area)",
      ),
    ]);
    expect(executed[1]).toContain("We have finished the following steps: \ntask:find the radius, execute task result:done(find the radius)");
    expect(executed[2]).toContain("The current step to execute is:round it\nYou should only execute the current step");
    expect(requestsOf("replanner")).toHaveLength(0);

    expect(ofType(events, "plan.created").map((e) => e.steps)).toEqual([["find the radius", "compute the area", "round it"]]);
    expect(ofType(events, "plan.updated").map((e) => e.finished)).toEqual([1, 2, 3]);
    const flowStates = ofType(events, "state.changed").filter((e) => e.machine === "plan_and_solve_flow");
    expect(flowStates.map((e) => e.to)).toEqual(["PLAN", "EXECUTE", "DONE"]);
  });

  it("links nested agent events and traces to the flow's step", async () => {
    const { url } = await serve({ planner: () => answer('{"steps": ["only step"]}'), executor: executeEcho });
    const dir = traceDir();
    const { result, events } = await runAll(makeTeam(url, flowAgent(), ["planner", "executor"]), { input: "go", traceDir: dir });
    expect(result.result_type).toBe("answer");

    const started = ofType(events, "agent.started");
    const flowStep = started.find((e) => e.agent_id === "flow")?.step_id;
    expect(flowStep).toBeTruthy();
    const children = started.filter((e) => e.agent_id !== "flow");
    expect(children.map((e) => e.agent_id)).toEqual(["planner", "executor"]);
    for (const child of children) {
      expect(child.parent_step_id).toBe(flowStep);
      const childEvents = events.filter((e) => e.step_id === child.step_id);
      expect(childEvents.some((e) => e.type === "llm.response")).toBe(true);
      expect(childEvents.every((e) => e.parent_step_id === flowStep && e.agent_id === child.agent_id)).toBe(true);
    }

    const store = TraceStore.open(dir);
    try {
      const stored = store.eventsOfTask(result.task_id);
      expect(stored.length).toBe(events.length);
      const storedExecutor = stored.filter((e) => e.agent_id === "executor");
      expect(storedExecutor.length).toBeGreaterThan(0);
      expect(storedExecutor.every((e) => e.parent_step_id === flowStep)).toBe(true);
    } finally {
      store.close();
    }
  });

  it("lets the replanner replace the plan and then answer", async () => {
    const { url } = await serve({
      planner: () => answer('{"steps": ["look up the formula", "guess"]}'),
      executor: executeEcho,
      replanner: (_, nth) =>
        nth === 0 ? answer('Updated plan:\n{"action": {"steps": ["compute pi * 5^2"]}}') : answer('{"action": {"response": "The area is 78.54"}}'),
    });
    const team = makeTeam(url, flowAgent({ enable_replanner: true }), ["planner", "executor", "replanner"]);
    const { result, events } = await runAll(team, { input: "Area of a circle of radius 5?", traceDir: traceDir() });

    expect(result).toMatchObject({ result_type: "answer", answer: "The area is 78.54" });
    const steps = requestsOf("executor").map((b) => /The current step to execute is:(.*)/.exec(queryOf(b))?.[1]);
    expect(steps).toEqual(["look up the formula", "compute pi * 5^2"]);

    const replans = requestsOf("replanner").map(queryOf);
    expect(replans).toHaveLength(2);
    expect(replans[0]).toContain("The target of user is:\nArea of a circle of radius 5?");
    expect(replans[0]).toContain("The origin plan is:\n1. look up the formula\n2. guess");
    expect(replans[0]).toContain("task:look up the formula, execute task result:done(look up the formula)");
    expect(replans[0]).toContain("a Action");
    expect(replans[1]).toContain("The origin plan is:\n1. compute pi * 5^2");
    expect(replans[1]).toContain("task:compute pi * 5^2, execute task result:done(compute pi * 5^2)");

    const updates = ofType(events, "plan.updated");
    expect(updates.at(-1)).toMatchObject({ steps: ["look up the formula", "compute pi * 5^2"], finished: 2 });
    const flowStates = ofType(events, "state.changed").filter((e) => e.machine === "plan_and_solve_flow");
    expect(flowStates.map((e) => e.to)).toEqual(["PLAN", "EXECUTE", "REPLAN", "EXECUTE", "REPLAN", "DONE"]);
  });

  it("reads planner and replanner replies with the team's parser module, validated like JSON ones", async () => {
    const { url } = await serve({
      planner: () => answer("PLAN\n- find the radius\n- compute the area"),
      executor: executeEcho,
      replanner: (_, nth) => (nth === 0 ? answer("CONTINUE\n- compute the area") : answer("DONE The area is 78.54")),
    });
    const dir = traceDir();
    writeFileSync(
      join(dir, "parse.mjs"),
      `const items = (text) => text.split("\\n").filter((l) => l.startsWith("- ")).map((l) => l.slice(2));
export function parsePlan(text) { return { steps: items(text) }; }
export function parseAction(text) {
  return text.startsWith("DONE ") ? { action: { response: text.slice(5) } } : { action: { steps: items(text) } };
}
`,
    );
    const team = { ...makeTeam(url, flowAgent({ enable_replanner: true, parser: join(dir, "parse.mjs") }), ["planner", "executor", "replanner"]), dir };
    const { result, events } = await runAll(team, { input: "Area of a circle of radius 5?", traceDir: dir });

    expect(result).toMatchObject({ result_type: "answer", answer: "The area is 78.54" });
    expect(ofType(events, "plan.created").map((e) => e.steps)).toEqual([["find the radius", "compute the area"]]);
    // The replies are the parser's to read: the queries carry no JSON format instructions.
    expect(queryOf(requestsOf("planner")[0]!)).toBe("Area of a circle of radius 5?");
    expect(queryOf(requestsOf("replanner")[0]!)).not.toContain("JSON");
  });

  it("sends a parser's result that fails the schema back once, then fails in one line; a parser that cannot load is one line too", async () => {
    const { url } = await serve({ planner: () => answer("nothing useful"), executor: executeEcho });
    const dir = traceDir();
    writeFileSync(join(dir, "parse.mjs"), "export function parsePlan(text) { return { steps: [] }; }\n");
    writeFileSync(join(dir, "broken.mjs"), "export const parsePlan = 42;\n");
    const run = (parser: string) =>
      runAll({ ...makeTeam(url, flowAgent({ parser: join(dir, parser) }), ["planner", "executor"]), dir }, { input: "go", traceDir: dir });

    const { result } = await run("parse.mjs");
    expect(result.error?.message).toBe(
      "planner 'planner' gave no valid Plan, even after one repair: the parser's result does not match the schema: /steps must NOT have fewer than 1 items",
    );
    expect(queryOf(requestsOf("planner")[1]!)).toContain("It cannot be used: the parser's result does not match the schema");
    const broken = await run("broken.mjs");
    expect(broken.result.result_type).toBe("error");
    expect(broken.result.error?.message).toMatch(/^parser module .*broken\.mjs: parsePlan must be a function$/);
  });

  it("sends a malformed plan back once for repair", async () => {
    const { url } = await serve({
      planner: (_, nth) => (nth === 0 ? answer("First measure, then compute.") : answer('{"steps": ["measure", "compute"]}')),
      executor: executeEcho,
    });
    const { result } = await runAll(makeTeam(url, flowAgent(), ["planner", "executor"]), { input: "Area?", traceDir: traceDir() });

    expect(result).toMatchObject({ result_type: "answer", answer: "done(compute)" });
    const planner = requestsOf("planner").map(queryOf);
    expect(planner).toHaveLength(2);
    expect(planner[1]).toContain("Your previous answer was:\nFirst measure, then compute.");
    expect(planner[1]).toContain("It cannot be used: no JSON object found in the answer.");
    expect(requestsOf("executor")).toHaveLength(2);
  });

  it("fails clearly when the repaired plan is still invalid", async () => {
    const { url } = await serve({
      planner: (_, nth) => (nth === 0 ? answer('{"plan": ["a"]}') : answer('{"steps": []}')),
      executor: executeEcho,
    });
    const { result, events } = await runAll(makeTeam(url, flowAgent(), ["planner", "executor"]), { input: "Area?", traceDir: traceDir() });

    expect(result.result_type).toBe("error");
    expect(result.error?.message).toBe(
      "planner 'planner' gave no valid Plan, even after one repair: the JSON does not match the schema: /steps must NOT have fewer than 1 items",
    );
    const planner = requestsOf("planner").map(queryOf);
    expect(planner).toHaveLength(2);
    expect(planner[1]).toContain("must have required property 'steps'");
    expect(planner[1]).toContain("must NOT have additional properties ('plan')");
    expect(requestsOf("executor")).toHaveLength(0);
    expect(ofType(events, "run.finished")[0]).toMatchObject({ result_type: "error", error: result.error?.message, error_code: result.error?.code });
  });

  it("sends an ambiguous Action back to the replanner once for repair", async () => {
    const { url } = await serve({
      planner: () => answer('{"steps": ["a"]}'),
      executor: executeEcho,
      replanner: (_, nth) => (nth === 0 ? answer('{"action": {"response": "done", "steps": ["b"]}}') : answer('{"action": {"response": "all done"}}')),
    });
    const team = makeTeam(url, flowAgent({ enable_replanner: true }), ["planner", "executor", "replanner"]);
    const { result } = await runAll(team, { input: "go", traceDir: traceDir() });
    expect(result).toMatchObject({ result_type: "answer", answer: "all done" });
    const replans = requestsOf("replanner").map(queryOf);
    expect(replans).toHaveLength(2);
    expect(replans[1]).toContain("/action must be exactly one of Response or Plan");
    expect(requestsOf("executor")).toHaveLength(1);
  });

  it("honours max_replan_rounds and falls back to a summary by the flow's model", async () => {
    const { url } = await serve({
      planner: () => answer('{"steps": ["step 0"]}'),
      executor: executeEcho,
      replanner: (_, nth) => answer(JSON.stringify({ action: { steps: [`step ${nth + 1}`] } })),
      model: () => ({ content: "Summary: everything done." }),
    });
    const team = makeTeam(url, flowAgent({ enable_replanner: true, max_replan_rounds: 2 }), ["planner", "executor", "replanner"]);
    const { result, events } = await runAll(team, { input: "Keep going", traceDir: traceDir() });

    expect(result).toMatchObject({ result_type: "answer", answer: "Summary: everything done." });
    // docs/design/plan-and-solve-flow-design.md loops `range(max_replan_rounds + 1)`: the first plan plus two replanned rounds.
    expect(requestsOf("executor")).toHaveLength(3);
    expect(requestsOf("replanner")).toHaveLength(3);
    const summary = requestsOf("model");
    expect(summary).toHaveLength(1);
    expect(summary[0]!.messages).toEqual([
      { role: "system", content: "Please answer user questions based on the given plan." },
      {
        role: "user",
        content:
          "Your objective was this: Keep going\n---\nFor the following plan:\n1. step 3\n---\nWe have finished the following steps:" +
          "\ntask:step 0, execute task result:done(step 0)\ntask:step 1, execute task result:done(step 1)\ntask:step 2, execute task result:done(step 2)",
      },
    ]);
    const flowStates = ofType(events, "state.changed").filter((e) => e.machine === "plan_and_solve_flow");
    expect(flowStates.map((e) => e.to).slice(-2)).toEqual(["SUMMARY", "DONE"]);
  });

  it("without a replanner, also stops after max_replan_rounds + 1 steps with the summary", async () => {
    const { url } = await serve({
      planner: () => answer('{"steps": ["a", "b", "c", "d"]}'),
      executor: executeEcho,
      model: () => ({ content: "partial summary" }),
    });
    const team = makeTeam(url, flowAgent({ max_replan_rounds: 1 }), ["planner", "executor"]);
    const { result } = await runAll(team, { input: "go", traceDir: traceDir() });
    expect(result).toMatchObject({ result_type: "answer", answer: "partial summary" });
    expect(requestsOf("executor")).toHaveLength(2);
    expect(queryOf(requestsOf("model")[0]!)).toContain("For the following plan:\n1. a\n2. b\n3. c\n4. d");
  });

  it("skips planning with pre_plan_steps", async () => {
    const { url } = await serve({ executor: executeEcho });
    const team = makeTeam(url, flowAgent({ pre_plan_steps: ["first", "second"] }), ["planner", "executor"]);
    const { result, events } = await runAll(team, { input: "go", traceDir: traceDir() });
    expect(result).toMatchObject({ result_type: "answer", answer: "done(second)" });
    expect(requestsOf("planner")).toHaveLength(0);
    expect(ofType(events, "plan.created")[0]?.steps).toEqual(["first", "second"]);
  });

  it("stops with an error naming the step when the executor fails and there is no replanner", async () => {
    const { url } = await serve({
      planner: () => answer('{"steps": ["a", "b", "c"]}'),
      executor: (body) => (queryOf(body).includes("execute is:b") ? badRequest("the executor broke") : executeEcho(body)),
    });
    const { result } = await runAll(makeTeam(url, flowAgent(), ["planner", "executor"]), { input: "go", traceDir: traceDir() });
    expect(result.result_type).toBe("error");
    expect(result.error?.message).toMatch(/^step 2 \("b"\) failed: executor 'executor': .*the executor broke/);
    expect(requestsOf("executor")).toHaveLength(2);
  });

  it("passes a failed step to the replanner when there is one", async () => {
    const { url } = await serve({
      planner: () => answer('{"steps": ["a"]}'),
      executor: () => badRequest("the executor broke"),
      replanner: () => answer('{"action": {"response": "could not do a"}}'),
    });
    const team = makeTeam(url, flowAgent({ enable_replanner: true }), ["planner", "executor", "replanner"]);
    const { result } = await runAll(team, { input: "go", traceDir: traceDir() });
    expect(result).toMatchObject({ result_type: "answer", answer: "could not do a" });
    expect(queryOf(requestsOf("replanner")[0]!)).toMatch(/task:a, execute task failed:executor 'executor': .*the executor broke/);
  });

  it("ends 'interrupted' when aborted during a step, without running further steps", async () => {
    const { url } = await serve({
      planner: () => answer('{"steps": ["slow step", "never run"]}'),
      executor: () => ({ ...answer("too late"), delay_ms: 60_000 }),
    });
    const controller = new AbortController();
    // Aborted once the executor's request has reached the model: during the step, on a loaded machine too.
    const abortWhenAsked = () => {
      const timer = setInterval(() => {
        if (requestsOf("executor").length === 0) return;
        clearInterval(timer);
        controller.abort();
      }, 20);
    };
    const started = Date.now();
    const { result, events } = await runAll(makeTeam(url, flowAgent(), ["planner", "executor"]), {
      input: "go",
      traceDir: traceDir(),
      signal: controller.signal,
      sinks: [(e) => e.type === "plan.created" && abortWhenAsked()],
    });
    // Stopped at the abort, not when the executor's reply came a minute later.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result).toMatchObject({ result_type: "error", error: { code: "ABORTED", message: "interrupted" }, interrupted: true });
    expect(requestsOf("executor")).toHaveLength(1);
    const flowStates = ofType(events, "state.changed").filter((e) => e.machine === "plan_and_solve_flow");
    expect(flowStates.at(-1)?.to).toBe("FAILED");
    expect(ofType(events, "agent.finished").find((e) => e.agent_id === "flow")).toMatchObject({ error: "interrupted" });
  });
});

describe("runtime validate and a flow's parser module", () => {
  it("imports it and checks its exports, each problem at the flow's parser key", async () => {
    const files = {
      "script.yaml": "version: 1\nreplies: []\n",
      "good.mjs": "export function parsePlan(text) { return { steps: text.split('\\n') }; }",
      "none.mjs": "export const other = 1;",
      "thrower.mjs": "throw new Error('boom');",
    };
    const teamOf = (parser: string) =>
      writeTeam(
        `version: 1\nname: v\nmodels:\n  m: { provider: scripted, script: ./script.yaml }\nagents:\n  a: { kind: react }\n  flow: { kind: plan_and_solve_flow, planner: a, executor: a, parser: ${parser} }\n`,
        files,
        tempDir(),
      );
    expect(await runCli(["validate", teamOf("./good.mjs")])).toMatchObject({ code: 0, stderr: "" });
    const none = await runCli(["validate", teamOf("./none.mjs")]);
    expect(none.code).toBe(2);
    expect(none.stderr.trim()).toMatch(/team\.yaml:7:\d+ \/agents\/flow\/parser parser module .*none\.mjs: it exports neither parsePlan nor parseAction$/);
    const thrower = await runCli(["validate", teamOf("./thrower.mjs")]);
    expect(thrower.code).toBe(2);
    expect(thrower.stderr.trim()).toMatch(/\/agents\/flow\/parser parser module .*thrower\.mjs cannot be loaded: boom$/);
  });
});
