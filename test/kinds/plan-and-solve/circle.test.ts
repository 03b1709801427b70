import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { ChatBody } from "../../support/openai-server.js";
import { startOpenAIServer } from "../../support/openai-server.js";
import {
  call,
  calls,
  expectStrictlyIncreasing,
  expectWellFormed,
  finalTodos,
  planTeam,
  runPlan,
  systemPrompt,
  todoVersions,
  todos,
  toolResult,
  topLevel,
  walked,
} from "../../support/plan-and-solve.js";

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
});

const QUESTION = "What are the area and circumference of a circle with radius 5 meters?";

/** The calculator's number, read from the tool message the runtime sent back. */
function computed(body: ChatBody, id: string): number {
  return (JSON.parse(toolResult(body, id) ?? "{}") as { result: number }).result;
}

describe("plan_and_solve: the circle question (docs/design/plan-and-solve-design.md diagram 7)", () => {
  it("plans 4 tasks, looks up, computes twice with the real calculator and terminates", async () => {
    const server = await startOpenAIServer({
      respond(body, index) {
        switch (index) {
          case 0:
            return calls(
              call("plan", "write_todos", todos("Look up the circle formulas", "Compute the area", "Compute the circumference", "Format the final answer")),
              call("check", "validate_plan", {}),
            );
          case 1:
            return calls(call("s1", "update_todo_item", { index: 1, status: "in_progress" }), call("look", "knowledge_lookup", { topic: "circle" }));
          case 2:
            return calls(
              call("d1", "update_todo_item", { index: 1, status: "completed" }),
              call("s2", "update_todo_item", { index: 2, status: "in_progress" }),
              call("area", "calculator", { expression: "round(pi * 5^2, 2)" }),
            );
          case 3:
            return calls(
              call("d2", "update_todo_item", { index: 2, status: "completed" }),
              call("s3", "update_todo_item", { index: 3, status: "in_progress" }),
              call("circ", "calculator", { expression: "round(2 * pi * 5, 2)" }),
            );
          case 4:
            return calls(
              call("d3", "update_todo_item", { index: 3, status: "completed" }),
              call("s4", "update_todo_item", { index: 4, status: "in_progress" }),
              call("d4", "update_todo_item", { index: 4, status: "completed" }),
            );
          default: {
            const area = computed(body, "area");
            const circ = computed(body, "circ");
            return calls(call("end", "terminate", { answer: `Area ${area} m², circumference ${circ} m.` }));
          }
        }
      },
    });
    servers.push(server);
    const { events, result } = await runPlan(planTeam(server.url), QUESTION);

    expect(result.result_type).toBe("answer");
    expect(result.answer).toContain("78.54");
    expect(result.answer).toContain("31.42");
    expect(topLevel(events)).toEqual(["IDLE", "PLANNING", "SOLVING", "VERIFYING", "FINISHED"]);
    // Substates of the design's diagram, in the order the calls drove them.
    const to = walked(events);
    expect(to.slice(0, 6)).toEqual([
      "IDLE",
      "PLANNING.AnalyzeProblem",
      "PLANNING.CreatePlan",
      "PLANNING.ValidatePlan",
      "PLANNING.StorePlan",
      "SOLVING.CheckNextTask",
    ]);
    expect(to).toEqual(expect.arrayContaining(["SOLVING.MarkInProgress", "SOLVING.ExecuteTool", "SOLVING.RecordResult", "SOLVING.MarkCompleted"]));
    expect(to.slice(-4)).toEqual(["VERIFYING.CheckResults", "VERIFYING.ValidateAnswer", "VERIFYING.FormatResponse", "FINISHED"]);

    expectStrictlyIncreasing(todoVersions(events));
    const list = finalTodos(events);
    expect(list).toHaveLength(4);
    expect(list.every((i) => i.status === "completed")).toBe(true);
    expect(events.filter((e) => e.type === "todo.completed")).toHaveLength(1);
    expect(events.filter((e) => e.type === "recursion.started").map((e) => (e.type === "recursion.started" ? e.iteration : 0))).toEqual([1, 2, 3, 4, 5, 6]);

    const bodies = server.chatRequests.map((r) => r.body);
    expect(bodies).toHaveLength(6);
    expectWellFormed(bodies);
    for (const body of bodies) {
      expect(body?.messages?.[1]).toMatchObject({ role: "user", content: QUESTION });
      expect((body!.tools as { function: { name: string } }[]).map((t) => t.function.name)).toEqual([
        "write_todos",
        "update_todo_item",
        "validate_plan",
        "calculator",
        "knowledge_lookup",
        "terminate",
      ]);
    }
    // The todo list is rendered into the system prompt afresh every round.
    expect(systemPrompt(bodies[0])).toContain("no todo list yet");
    expect(systemPrompt(bodies[1])).toContain("1. [ ] Look up the circle formulas (pending");
    expect(systemPrompt(bodies[2])).toContain("1. [>] Look up the circle formulas (in_progress, 1 tool call)");
    expect(systemPrompt(bodies[5])).toContain("4. [x] Format the final answer (completed");
    expect(systemPrompt(bodies[5])).toContain("model call 6 of at most 30");
    expect(JSON.parse(toolResult(bodies[1], "check") ?? "{}")).toMatchObject({ valid: true });
    expect(toolResult(bodies[2], "look")).toContain("pi * r^2");
  });

  it("runs offline on the scripted model from teams/circle-plan.yaml", async () => {
    const file = fileURLToPath(new URL("../../../teams/circle-plan.yaml", import.meta.url));
    const { events, result } = await runPlan(file, QUESTION);
    expect(result.result_type).toBe("answer");
    expect(result.answer).toMatch(/78\.54/);
    expect(result.answer).toMatch(/31\.42/);
    expect(topLevel(events)).toEqual(["IDLE", "PLANNING", "SOLVING", "VERIFYING", "FINISHED"]);
    const tools = events.flatMap((e) => (e.type === "tool.finished" && !e.tool.includes("todo") ? [e.tool] : []));
    expect(tools).toEqual(["validate_plan", "knowledge_lookup", "calculator", "calculator", "terminate"]);
    expect(finalTodos(events).map((i) => i.status)).toEqual(["completed", "completed", "completed", "completed"]);
    expectStrictlyIncreasing(todoVersions(events));
  });
});
