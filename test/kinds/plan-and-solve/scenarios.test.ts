import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../../src/index.js";
import { startOpenAIServer, type Reply } from "../../support/openai-server.js";
import { tempDir } from "../../support/team.js";
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

async function server(replies: Reply[]) {
  const s = await startOpenAIServer({ replies });
  servers.push(s);
  return s;
}

const calc = (id: string, expression: string) => call(id, "calculator", { expression });
const progress = (events: RunEvent[]) =>
  events.flatMap((e) => (e.type === "todo.item_progress" ? [`${e.item.index}:${e.item.status}:${e.item.tool_calls_count}`] : []));

describe("plan_and_solve: automatic status and manual updates", () => {
  it("completes items after 3 successful calls when the model forgets to update statuses", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area", "Compute the circumference"))),
      calls(calc("a1", "pi * 25")),
      calls(calc("a2", "round(pi * 25, 2)"), calc("a3", "round(pi * 25, 1)")),
      calls(calc("c1", "2 * pi * 5"), calc("c2", "round(2 * pi * 5, 2)"), calc("c3", "round(2 * pi * 5, 1)")),
      calls(call("t", "terminate", { answer: "area 78.54, circumference 31.42" })),
    ]);
    const { events, result } = await runPlan(planTeam(s.url), "circle r=5");
    expect(result).toMatchObject({ result_type: "answer", answer: "area 78.54, circumference 31.42" });
    expect(progress(events)).toEqual([
      "1:in_progress:0",
      "1:in_progress:1",
      "1:in_progress:2",
      "1:completed:3",
      "2:in_progress:0",
      "2:in_progress:1",
      "2:in_progress:2",
      "2:completed:3",
    ]);
    expect(finalTodos(events).map((i) => i.status)).toEqual(["completed", "completed"]);
    expect(topLevel(events)).toEqual(["IDLE", "PLANNING", "SOLVING", "VERIFYING", "FINISHED"]);
    expectStrictlyIncreasing(todoVersions(events));
    expectWellFormed(s.chatRequests.map((r) => r.body));
    expect(systemPrompt(s.chatRequests[2]?.body)).toContain("1. [>] Compute the area (in_progress, 1 tool call)");
  });

  it("blocks after 2 failures in a row, and a manual retry starts the count afresh", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area", "Compute the circumference"))),
      calls(calc("f1", "radius * 2"), calc("f2", "radius ^ 2")),
      calls(call("retry", "update_todo_item", { index: 1, status: "in_progress", notes: "use the number 5" }), calc("f3", "r * 2")),
      calls(calc("ok1", "pi * 5^2"), call("done1", "update_todo_item", { index: 1, status: "completed" })),
      calls(calc("ok2", "2 * pi * 5"), call("done2", "update_todo_item", { index: 2, status: "completed" })),
      calls(call("t", "terminate", { answer: "done" })),
    ]);
    const { events, result } = await runPlan(planTeam(s.url), "circle r=5");
    expect(result.result_type).toBe("answer");
    const statusAfter = (n: number) =>
      (events.find((e) => e.type === "todo.item_progress" && e.item.tool_calls_count === n && e.item.index === 1) as { item: { status: string } } | undefined)
        ?.item.status;
    expect(statusAfter(1)).toBe("in_progress");
    expect(statusAfter(2)).toBe("blocked");
    // The failure after the manual retry is the first of a new count: still in progress.
    expect(statusAfter(3)).toBe("in_progress");
    const body = s.chatRequests[2]?.body;
    expect(systemPrompt(body)).toContain("1. [#] Compute the area (blocked, 2 tool calls)");
    expect(toolResult(body, "f2")).toMatch(/^Error: .*unknown symbol/);
    expect(finalTodos(events).map((i) => i.status)).toEqual(["completed", "completed"]);
    expectStrictlyIncreasing(todoVersions(events));
    expectWellFormed(s.chatRequests.map((r) => r.body));
  });

  it("honours todo_complete_after and todo_block_after from the team file", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area", "Compute the circumference"))),
      calls(calc("a", "pi * 25"), calc("bad", "r")),
      calls(call("t", "terminate", { answer: "x" })),
      calls(call("t2", "terminate", { answer: "x" })),
    ]);
    const { events } = await runPlan(planTeam(s.url, "    todo_complete_after: 1\n    todo_block_after: 1"), "q");
    expect(progress(events)).toEqual(["1:in_progress:0", "1:completed:1", "2:in_progress:0", "2:blocked:1"]);
    expect(systemPrompt(s.chatRequests[0]?.body)).toContain("after 1 successful calls that item is marked completed, after 1 failures in a row");
    expectWellFormed(s.chatRequests.map((r) => r.body));
  });

  it("retries a failed item then skips it; illegal transitions are refused with a reason", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area", "Compute the circumference"))),
      calls(calc("f1", "area_of_circle(5)")),
      calls(call("failed", "update_todo_item", { index: 1, status: "failed", notes: "calculator refused the function" })),
      calls(call("retry", "update_todo_item", { index: 1, status: "in_progress" }), calc("f2", "circle(5)")),
      calls(
        call("skip", "update_todo_item", { index: 1, status: "skipped", notes: "cannot compute" }),
        call("illegal", "update_todo_item", { index: 1, status: "completed" }),
        call("early", "update_todo_item", { index: 2, status: "completed" }),
      ),
      calls(
        call("start2", "update_todo_item", { index: 2, status: "in_progress" }),
        calc("c", "2 * pi * 5"),
        call("done2", "update_todo_item", { index: 2, status: "completed" }),
      ),
      calls(call("t", "terminate", { answer: "circumference 31.42; the area could not be computed" })),
    ]);
    const { events, result } = await runPlan(planTeam(s.url), "q");
    expect(result.result_type).toBe("answer");
    const bodies = s.chatRequests.map((r) => r.body);
    expect(toolResult(bodies[5], "illegal")).toBe("Error: Cannot mark item 1 completed: it is already skipped, which is final.");
    expect(toolResult(bodies[5], "early")).toBe("Error: Cannot mark item 2 completed: it is still pending: mark it in_progress before marking it completed.");
    const updates = events.flatMap((e) => (e.type === "todo.updated" ? [e.todos[0]?.status] : []));
    expect(updates).toEqual(["pending", "failed", "in_progress", "skipped", "skipped", "skipped"]);
    expect(finalTodos(events)).toMatchObject([
      { index: 1, status: "skipped", notes: "cannot compute", tool_calls_count: 2 },
      { index: 2, status: "completed", tool_calls_count: 1 },
    ]);
    expect(events.filter((e) => e.type === "todo.completed")).toHaveLength(1);
    expectStrictlyIncreasing(todoVersions(events));
    expectWellFormed(bodies);
  });
});

describe("plan_and_solve: planning", () => {
  it("plans again after a broken write_todos or a plan validate_plan rejects", async () => {
    const s = await server([
      calls(call("broken", "write_todos", '{"todos": [{"content": "Compute')),
      calls(call("p1", "write_todos", todos("What is the area?", "Compute the area", "compute the area.")), call("v1", "validate_plan", {})),
      calls(call("p2", "write_todos", todos("Compute the area")), call("v2", "validate_plan", {})),
      calls(calc("a", "pi * 25"), call("d", "update_todo_item", { index: 1, status: "completed" }), call("t", "terminate", { answer: "78.54" })),
    ]);
    const { events, result } = await runPlan(planTeam(s.url), "q");
    expect(result).toMatchObject({ result_type: "answer", answer: "78.54" });
    const bodies = s.chatRequests.map((r) => r.body);
    expect(toolResult(bodies[1], "broken")).toMatch(/^Error: /);
    const review = JSON.parse(toolResult(bodies[2], "v1") ?? "{}") as { valid: boolean; problems: string[] };
    expect(review.valid).toBe(false);
    expect(review.problems.join(" ")).toMatch(/question.*Items 2 and 3 say the same thing|Items 2 and 3 say the same thing/);
    const to = walked(events);
    // Each failed attempt leads back to AnalyzeProblem; the valid plan goes on to SOLVING.
    expect(to.filter((t) => t === "PLANNING.AnalyzeProblem")).toHaveLength(3);
    expect(to.indexOf("SOLVING.CheckNextTask")).toBeGreaterThan(to.lastIndexOf("PLANNING.AnalyzeProblem"));
    expectWellFormed(bodies);
  });
});

describe("plan_and_solve: ending the run", () => {
  it("refuses an early terminate once, then accepts it and marks the open items skipped", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Look up the formulas", "Compute the area", "Compute the circumference"))),
      calls(call("look", "knowledge_lookup", { topic: "circle area" })),
      calls(call("t1", "terminate", { answer: "The area is about 78.5 m²." }), calc("after", "1 + 1")),
      calls(call("t2", "terminate", { answer: "The area is about 78.5 m²." })),
    ]);
    // The figures are not what this test is about (no tool computed them here): verify.test.ts checks them.
    const { events, result } = await runPlan(planTeam(s.url, "    verify: off\n"), "q");
    expect(result).toMatchObject({ result_type: "answer", answer: "The area is about 78.5 m²." });
    const bodies = s.chatRequests.map((r) => r.body);
    expect(bodies).toHaveLength(4);
    expect(toolResult(bodies[3], "t1")).toMatch(/^Error: Not finished: todo items 1 \(in_progress\), 2 \(pending\), 3 \(pending\) are still open/);
    // The call after the refused terminate still ran and was answered.
    expect(toolResult(bodies[3], "after")).toContain('"result":2');
    expect(finalTodos(events)).toMatchObject([
      { status: "skipped", notes: "skipped: the run finished before this item was done" },
      { status: "skipped" },
      { status: "skipped" },
    ]);
    const terminates = events.flatMap((e) => (e.type === "tool.finished" && e.tool === "terminate" ? [e.ok] : []));
    expect(terminates).toEqual([false, true]);
    expect(topLevel(events)).toEqual(["IDLE", "PLANNING", "SOLVING", "VERIFYING", "SOLVING", "VERIFYING", "FINISHED"]);
    expect(events.filter((e) => e.type === "todo.completed")).toHaveLength(1);
    expectStrictlyIncreasing(todoVersions(events));
    expectWellFormed(bodies);
  });

  it("accepts an early terminate at once when no model call is left", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area", "Compute the circumference"))),
      calls(call("t", "terminate", { answer: "area only" })),
    ]);
    const { events, result } = await runPlan(planTeam(s.url, "    max_iteration: 2"), "q");
    expect(result).toMatchObject({ result_type: "answer", answer: "area only" });
    expect(finalTodos(events).map((i) => i.status)).toEqual(["skipped", "skipped"]);
    expectWellFormed(s.chatRequests.map((r) => r.body));
  });

  it("stops at max_iteration mid-plan with an error, a summary call and a well-formed transcript", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area", "Compute the circumference", "Answer"))),
      calls(calc("a", "pi * 25")),
      calls(call("u", "update_todo_item", { index: 1, status: "completed" }), calc("b", "2 * pi * 5")),
      { content: "The area is 78.54; the circumference and the answer are not done." },
    ]);
    const traceDir = tempDir();
    const file = planTeam(s.url, "    max_iteration: 3");
    const { events, result } = await runPlan(file, "q", { traceDir, sessionId: "chat-42" });
    expect(result.result_type).toBe("error");
    expect(result.error?.code).toBe("MAX_ITERATION");
    expect(result.error?.message).toMatch(/^reached max_iteration \(3\) before the plan was finished\. Summary so far: The area is 78\.54/);
    expect(topLevel(events)).toEqual(["IDLE", "PLANNING", "SOLVING", "FinalSummary", "FAILED"]);
    expect(events.filter((e) => e.type === "recursion.started")).toHaveLength(3);
    const bodies = s.chatRequests.map((r) => r.body);
    expect(bodies).toHaveLength(4);
    expectWellFormed(bodies);
    // The summary request offers no tools and asks in a user message after the last tool result.
    expect(bodies[3]?.tools).toBeUndefined();
    expect(bodies[3]?.messages?.at(-1)).toMatchObject({ role: "user" });
    expect(String(bodies[3]?.messages?.at(-1)?.content)).toMatch(/used all 3 of your model calls/);
    // A failed run leaves the list open, so the session can continue it.
    expect(finalTodos(events).map((i) => i.status)).toEqual(["completed", "in_progress", "pending"]);
    const lastVersion = todoVersions(events).at(-1) ?? 0;

    await s.close();
    servers.pop();
    const s2 = await server([
      calls(
        call("fin2", "update_todo_item", { index: 2, status: "completed" }),
        call("s3", "update_todo_item", { index: 3, status: "in_progress" }),
        call("fin3", "update_todo_item", { index: 3, status: "completed" }),
      ),
      calls(call("t", "terminate", { answer: "area 78.54, circumference 31.42" })),
    ]);
    // The figures are not what this test is about (no tool computed them here): verify.test.ts checks them.
    const next = await runPlan(planTeam(s2.url, "    verify: off\n"), "and the rest?", { traceDir, sessionId: "chat-42" });
    expect(next.result).toMatchObject({ result_type: "answer", answer: "area 78.54, circumference 31.42" });
    expect(systemPrompt(s2.chatRequests[0]?.body)).toContain("2. [>] Compute the circumference (in_progress, 1 tool call)");
    const versions = todoVersions(next.events);
    expect(versions[0]).toBeGreaterThan(lastVersion);
    expectStrictlyIncreasing(versions);
    expect(finalTodos(next.events).map((i) => i.status)).toEqual(["completed", "completed", "completed"]);
    expect(next.events.find((e) => e.type === "todo.updated")).toMatchObject({ session_id: "chat-42" });
  });

  it("answers with the summary when the last model call finished the plan but did not terminate", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area"))),
      calls(
        call("s", "update_todo_item", { index: 1, status: "in_progress" }),
        calc("a", "round(pi * 25, 2)"),
        call("d", "update_todo_item", { index: 1, status: "completed" }),
      ),
      { content: "The area is 78.54 m²." },
    ]);
    const { events, result } = await runPlan(planTeam(s.url, "    max_iteration: 2"), "q");
    expect(result).toMatchObject({ result_type: "answer", answer: "The area is 78.54 m²." });
    expect(topLevel(events)).toEqual(["IDLE", "PLANNING", "SOLVING", "VERIFYING", "FINISHED"]);
    const bodies = s.chatRequests.map((r) => r.body);
    expect(bodies).toHaveLength(3);
    expect(bodies[2]?.tools).toBeUndefined();
    expect(String(bodies[2]?.messages?.at(-1)?.content)).toMatch(/without giving a final answer/);
    expect(finalTodos(events).map((i) => i.status)).toEqual(["completed"]);
    expectWellFormed(bodies);
  });

  it("takes a reply without tool calls as the answer, and asks for a summary when it is empty", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area"))),
      calls(calc("a", "pi * 25"), calc("b", "round(pi * 25, 2)"), calc("c", "round(pi * 25, 1)")),
      { content: "" },
      { content: "The area is 78.54 m²." },
    ]);
    const { events, result } = await runPlan(planTeam(s.url), "q");
    expect(result).toMatchObject({ result_type: "answer", answer: "The area is 78.54 m²." });
    const bodies = s.chatRequests.map((r) => r.body);
    expect(bodies).toHaveLength(4);
    expect(bodies[3]?.tools).toBeUndefined();
    expect(String(bodies[3]?.messages?.at(-1)?.content)).toMatch(/without giving a final answer/);
    expectWellFormed(bodies);
    expect(topLevel(events)).toEqual(["IDLE", "PLANNING", "SOLVING", "VERIFYING", "FINISHED"]);
  });

  it("reminds once when the model replies with text while items are open, then goes on working", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area", "Compute the circumference"))),
      { content: "I will now compute the area using the calculator." },
      calls(
        call("s1", "update_todo_item", { index: 1, status: "in_progress" }),
        calc("a", "round(pi * 25, 2)"),
        call("d1", "update_todo_item", { index: 1, status: "completed" }),
        call("s2", "update_todo_item", { index: 2, status: "in_progress" }),
        calc("c", "round(2 * pi * 5, 2)"),
        call("d2", "update_todo_item", { index: 2, status: "completed" }),
      ),
      calls(call("t", "terminate", { answer: "area 78.54 m², circumference 31.42 m" })),
    ]);
    const { events, result } = await runPlan(planTeam(s.url), "q");
    expect(result).toMatchObject({ result_type: "answer", answer: "area 78.54 m², circumference 31.42 m" });
    const bodies = s.chatRequests.map((r) => r.body);
    expect(bodies).toHaveLength(4);
    const reminder = bodies[2]?.messages?.at(-1);
    expect(reminder).toMatchObject({ role: "user" });
    expect(String(reminder?.content)).toMatch(/no tool call.*todo items 1 \(pending\), 2 \(pending\) are still open/);
    expect(finalTodos(events).map((i) => i.status)).toEqual(["completed", "completed"]);
    expect(topLevel(events)).toEqual(["IDLE", "PLANNING", "SOLVING", "VERIFYING", "SOLVING", "VERIFYING", "FINISHED"]);
    expectWellFormed(bodies);
  });

  it("accepts a text reply repeated after the reminder as the answer, skipping the open items", async () => {
    const s = await server([
      calls(call("p", "write_todos", todos("Compute the area", "Compute the circumference"))),
      { content: "The area is about 78.5 m²." },
      { content: "The area is about 78.5 m²." },
    ]);
    // The figures are not what this test is about (no tool computed them here): verify.test.ts checks them.
    const { events, result } = await runPlan(planTeam(s.url, "    verify: off\n"), "q");
    expect(result).toMatchObject({ result_type: "answer", answer: "The area is about 78.5 m²." });
    expect(s.chatRequests).toHaveLength(3);
    expect(finalTodos(events).map((i) => i.status)).toEqual(["skipped", "skipped"]);
    expectWellFormed(s.chatRequests.map((r) => r.body));
  });

  it("ends in FAILED with a one-line error when the model is unavailable", async () => {
    const s = await server([calls(call("p", "write_todos", todos("Compute the area"))), { status: 500, error: { message: "upstream exploded" } }]);
    const { events, result } = await runPlan(planTeam(s.url), "q");
    expect(result.result_type).toBe("error");
    expect(result.error?.message).toMatch(/upstream exploded|500/);
    expect(result.error?.message).not.toContain("\n");
    expect(topLevel(events).at(-1)).toBe("FAILED");
    expect(events.some((e) => e.type === "llm.error")).toBe(true);
    expectWellFormed(s.chatRequests.map((r) => r.body));
  });
});
