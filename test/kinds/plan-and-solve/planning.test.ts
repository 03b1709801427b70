import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../../src/events/types.js";
import { reviewPlan } from "../../../src/kinds/plan-and-solve/todo-tools.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer } from "../../support/openai-server.js";
import { writeTeam } from "../../support/team.js";
import { call, calls, runPlan, todos, walked } from "../../support/plan-and-solve.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
});

const finished = (events: RunEvent[]) => events.filter((e): e is Extract<RunEvent, { type: "tool.finished" }> => e.type === "tool.finished");
const toolMessage = (body: ChatBody, id: string) => String(body.messages?.find((m) => m.role === "tool" && m.tool_call_id === id)?.content ?? "");

function team(url: string): string {
  return writeTeam(`version: 1
name: planning
models:
  default: { provider: openai, model: test-model, base_url: "${url}", api_key: sk-test-planning, max_retries: 0 }
tools:
  web_search:
    command: [node, -e, "process.stdout.write('{}')"]
agents:
  solver:
    kind: plan_and_solve
    tools: [write_todos, update_todo_item, validate_plan, calculator, terminate]
  other:
    kind: react
    tools: [web_search]
`);
}

describe("PLANNING is reviewed and comes first", () => {
  it("validate_plan flags a plan that needs tools the agent lacks, and the model plans again", async () => {
    const bodies: ChatBody[] = [];
    const server = await startOpenAIServer({
      respond(body, index) {
        bodies.push(body);
        if (index === 0) {
          return calls(
            call("p1", "write_todos", todos("Search the latest radius with web_search", "Compute the area with the calculator")),
            call("v1", "validate_plan", {}),
          );
        }
        if (index === 1) return calls(call("p2", "write_todos", todos("Compute the area with the calculator")), call("v2", "validate_plan", {}));
        if (index === 2)
          return calls(call("s1", "update_todo_item", { index: 1, status: "in_progress" }), call("a", "calculator", { expression: "round(pi * 5^2, 2)" }));
        if (index === 3) return calls(call("d1", "update_todo_item", { index: 1, status: "completed" }));
        return calls(call("t", "terminate", { answer: "78.54 m²" }));
      },
    });
    servers.push(server);
    const { result, events } = await runPlan(team(server.url), "Area of a circle of radius 5?");
    expect(result).toMatchObject({ result_type: "answer", answer: "78.54 m²" });
    const reviews = finished(events)
      .filter((e) => e.tool === "validate_plan")
      .map((e) => e.result as { valid: boolean; problems: string[] });
    expect(reviews[0]).toMatchObject({ valid: false });
    expect(reviews[0]?.problems).toEqual([
      "Item 1 needs web_search, which you do not have (your tools: calculator, terminate): plan it with your own tools, or leave it out.",
    ]);
    expect(reviews[1]).toMatchObject({ valid: true, problems: [] });
    // The rejected plan sent the model back to planning: its next request came from PLANNING.AnalyzeProblem.
    expect(toolMessage(bodies[1]!, "v1")).toContain("web_search, which you do not have");
  });

  it("with verify: model, validate_plan asks the model whether the plan covers the request, and a gap sends it back to planning", async () => {
    const bodies: ChatBody[] = [];
    const isReview = (body: ChatBody) => String(body.messages?.[0]?.content ?? "").startsWith("You review a plan");
    let reviews = 0;
    const server = await startOpenAIServer({
      respond(body) {
        bodies.push(body);
        if (isReview(body)) {
          reviews++;
          const plan = String(body.messages?.[1]?.content ?? "").split("Plan:")[1] ?? "";
          return {
            content: plan.includes("circumference")
              ? '{"verdict": "pass", "problems": []}'
              : '{"verdict": "fail", "problems": ["the circumference the user asked for is in no item"]}',
          };
        }
        const work = bodies.filter((b) => !isReview(b)).length - 1;
        if (work === 0) return calls(call("p1", "write_todos", todos("Compute the area with the calculator")), call("v1", "validate_plan", {}));
        if (work === 1)
          return calls(
            call("p2", "write_todos", todos("Compute the area with the calculator", "Compute the circumference with the calculator")),
            call("v2", "validate_plan", {}),
          );
        return calls(call("t", "terminate", { answer: "78.54 m² and 31.42 m" }));
      },
    });
    servers.push(server);
    const file = team(server.url);
    writeFileSync(file, readFileSync(file, "utf8").replace("terminate]\n  other:", "terminate]\n    verify: model\n  other:"));
    expect(readFileSync(file, "utf8")).toContain("verify: model");
    // Asked without listing its parts, so only the model can see the gap (a listed part is checked without it, below).
    const { events } = await runPlan(file, "How large is a circle of radius 5, and how long is its edge?");
    const results = finished(events)
      .filter((e) => e.tool === "validate_plan")
      .map((e) => e.result as { valid: boolean; problems: string[] });
    expect(results[0]).toEqual({
      valid: false,
      problems: ["Coverage: the circumference the user asked for is in no item"],
      advice: "Fix these problems with write_todos, then continue.",
    });
    expect(results[1]).toMatchObject({ valid: true, problems: [] });
    expect(reviews).toBe(2);
  });

  it("by default (verify: checks), validate_plan flags a part the request lists that no item mentions, without a model call", async () => {
    let n = 0;
    const server = await startOpenAIServer({
      respond() {
        const step = n++;
        if (step === 0) return calls(call("p1", "write_todos", todos("Compute the area with the calculator")), call("v1", "validate_plan", {}));
        return calls(
          call("p2", "write_todos", todos("Compute the area with the calculator", "Compute the circumference with the calculator")),
          call("v2", "validate_plan", {}),
          call("t", "terminate", { answer: "unused" }),
        );
      },
    });
    servers.push(server);
    const { events } = await runPlan(team(server.url), "What are the area and circumference of a circle with radius 5 meters?");
    const results = finished(events)
      .filter((e) => e.tool === "validate_plan")
      .map((e) => e.result as { valid: boolean; problems: string[] });
    expect(results[0]).toEqual({
      valid: false,
      problems: ["Coverage: the request asks for the circumference, which no item mentions"],
      advice: "Fix these problems with write_todos, then continue.",
    });
    expect(results[1]).toMatchObject({ valid: true, problems: [] });
    expect(events.some((e) => e.type === "llm.response" && e.action_type === "REVIEW_PLAN")).toBe(false);
  });

  it("requires a plan before work tools: each call before write_todos is refused unrun, in PLANNING.AnalyzeProblem, never SOLVING", async () => {
    const bodies: ChatBody[] = [];
    const server = await startOpenAIServer({
      respond(body, index) {
        bodies.push(body);
        if (index === 0) return calls(call("a1", "calculator", { expression: "round(pi * 5^2, 2)" }), call("a2", "calculator", { expression: "1 + 1" }));
        if (index === 1) return calls(call("a3", "calculator", { expression: "round(pi * 5^2, 2)" })); // still no plan: refused again
        if (index === 2)
          return calls(call("p", "write_todos", todos("Compute the area with the calculator")), call("a4", "calculator", { expression: "round(pi * 5^2, 2)" }));
        if (index === 3) return calls(call("d", "update_todo_item", { index: 1, status: "completed" }));
        return calls(call("t", "terminate", { answer: "78.54 m²" }));
      },
    });
    servers.push(server);
    const { result, events } = await runPlan(team(server.url), "Area of a circle of radius 5?");
    expect(result).toMatchObject({ result_type: "answer", answer: "78.54 m²" });
    const calcs = finished(events).filter((e) => e.tool === "calculator");
    expect(calcs.map((e) => [e.call_id, e.ok])).toEqual([
      ["a1", false],
      ["a2", false],
      ["a3", false],
      ["a4", true],
    ]);
    expect(calcs[0]?.error).toBe("Plan first: write the todo list with write_todos (one concrete step per item), then do the steps. This call was not run.");
    expect(toolMessage(bodies[1]!, "a1")).toContain("Plan first");
    expect(toolMessage(bodies[2]!, "a3")).toContain("Plan first");
    // Each refused call is answered where the plan is asked for; SOLVING starts with the first call that runs.
    const states = walked(events, "plan_and_solve");
    expect(states.slice(0, states.indexOf("PLANNING.CreatePlan"))).toEqual(["IDLE", "PLANNING.AnalyzeProblem"]);
    expect(states.filter((s) => s === "SOLVING.ExecuteTool")).toHaveLength(2); // a4, then the update
    // The refusals are no model calls: five replies, five requests.
    expect(bodies).toHaveLength(5);
  });

  it("plan: optional lets work tools run before any plan", async () => {
    const server = await startOpenAIServer({
      respond(_body, index) {
        if (index === 0) return calls(call("a1", "calculator", { expression: "round(pi * 5^2, 2)" }));
        return calls(call("t", "terminate", { answer: "78.54 m²" }));
      },
    });
    servers.push(server);
    const file = team(server.url);
    writeFileSync(file, readFileSync(file, "utf8").replace("terminate]\n  other:", "terminate]\n    plan: optional\n  other:"));
    const { result, events } = await runPlan(file, "Area of a circle of radius 5?");
    expect(result).toMatchObject({ result_type: "answer", answer: "78.54 m²" });
    expect(
      finished(events)
        .filter((e) => e.tool === "calculator")
        .map((e) => e.ok),
    ).toEqual([true]);
  });

  it("reviewPlan: tools named in items are checked against the agent's own", () => {
    const items = todos("Fetch the page with http_get", "Compute the total with the calculator", "Write the answer").todos.map((t, i) => ({
      index: i + 1,
      content: t.content,
      status: "pending" as const,
      tool_calls_count: 0,
    }));
    expect(reviewPlan(items, { available: ["calculator", "terminate"], unavailable: ["web_search"] }).problems).toEqual([
      "Item 1 needs http_get, which you do not have (your tools: calculator, terminate): plan it with your own tools, or leave it out.",
    ]);
    expect(reviewPlan(items, { available: ["calculator"], unavailable: [] }).problems).toHaveLength(1);
    expect(reviewPlan(items.slice(1), { available: ["write_todos"], unavailable: ["calculator"] }).problems).toEqual([
      "Item 2 needs calculator, which you do not have (your tools: none): plan it with your own tools, or leave it out.",
    ]);
  });
});
