import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../../src/index.js";
import { startOpenAIServer, type ChatBody, type Reply } from "../../support/openai-server.js";
import { tempDir, writeTeam } from "../../support/team.js";
import { call, calls, expectStrictlyIncreasing, expectWellFormed, runPlan, systemPrompt, todos } from "../../support/plan-and-solve.js";

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
});

type TodoEvent = Extract<RunEvent, { type: "todo.updated" | "todo.item_progress" | "todo.completed" }>;
const todoEvents = (events: RunEvent[]) =>
  events.filter((e): e is TodoEvent => e.type === "todo.updated" || e.type === "todo.item_progress" || e.type === "todo.completed");

/**
 * A plan_and_solve agent that plans one item named after its step, works it
 * with the calculator, completes it and terminates. `step` reads the step
 * from the query the agent was called with.
 */
function worker(step: (query: string) => string) {
  return (body: ChatBody): Reply => {
    const messages = body.messages ?? [];
    const me = step(String(messages.find((m) => m.role === "user")?.content ?? ""));
    const round = messages.filter((m) => m.role === "assistant").length;
    if (round === 0) return { ...calls(call(`w${me}`, "write_todos", todos(`Work on step ${me}`))), delay_ms: me === "A" ? 0 : 60 };
    if (round === 1) {
      return {
        ...calls(call(`c${me}`, "calculator", { expression: "1 + 1" }), call(`d${me}`, "update_todo_item", { index: 1, status: "completed" })),
        delay_ms: 80,
      };
    }
    return calls(call(`t${me}`, "terminate", { answer: `done ${me}` }));
  };
}

function team(url: string, agents: string): string {
  return writeTeam(`version: 1
name: nested-todos
models:
  default: { provider: openai, model: test-model, base_url: "${url}", api_key: test-key, max_retries: 0 }
agents:
${agents}
  worker: { kind: plan_and_solve, tools: [write_todos, update_todo_item, calculator, terminate] }
`);
}

/** Each list's events: one session_id per child, versions strictly increasing within it, one item content. */
function expectSeparateLists(events: RunEvent[], runSession: string, children: number): void {
  const bySession = new Map<string, TodoEvent[]>();
  for (const e of todoEvents(events)) bySession.set(e.session_id, [...(bySession.get(e.session_id) ?? []), e]);
  expect(bySession.size).toBe(children);
  expect(bySession.has(runSession)).toBe(false);
  for (const [session, list] of bySession) {
    expect(session.startsWith(`${runSession}:`)).toBe(true);
    expectStrictlyIncreasing(list.map((e) => e.version));
    const contents = new Set(list.flatMap((e) => ("todos" in e ? e.todos : [e.item]).map((i) => i.content)));
    expect(contents.size).toBe(1);
    // Every event of one list comes from one agent step.
    expect(new Set(list.map((e) => e.step_id)).size).toBe(1);
  }
}

describe("plan_and_solve as a child of another agent", () => {
  it("gives each call of the executor its own todo list, not the conversation's", async () => {
    const s = await startOpenAIServer({ respond: worker((q) => /The current step to execute is:(\w)/.exec(q)?.[1] ?? "?") });
    servers.push(s);
    const file = team(s.url, "  flow: { kind: plan_and_solve_flow, planner: worker, executor: worker, pre_plan_steps: [A, B] }");
    const traceDir = tempDir();
    const { events, result } = await runPlan(file, "go", { traceDir, sessionId: "chat-7" });
    expect(result).toMatchObject({ result_type: "answer", answer: "done B" });
    expectSeparateLists(events, "chat-7", 2);
    // The second step starts from an empty list: it does not see step A's.
    const firstOfB = s.chatRequests.find((r) => String(r.body?.messages?.[1]?.content).includes("execute is:B"));
    expect(systemPrompt(firstOfB?.body)).toContain("(no todo list yet");
    expectWellFormed(s.chatRequests.map((r) => r.body));

    // The conversation's own list is untouched: a follow-up in the session starts empty.
    const s2 = await startOpenAIServer({ replies: [{ content: "nothing to do" }] });
    servers.push(s2);
    const direct = writeTeam(`version: 1
name: direct
models:
  default: { provider: openai, model: test-model, base_url: "${s2.url}", api_key: test-key, max_retries: 0 }
agents:
  worker: { kind: plan_and_solve, tools: [write_todos, update_todo_item, calculator, terminate] }
`);
    await runPlan(direct, "anything left?", { traceDir, sessionId: "chat-7" });
    expect(systemPrompt(s2.chatRequests[0]?.body)).toContain("(no todo list yet");
  });

  it("keeps the lists of solvers running at once apart", async () => {
    const s = await startOpenAIServer({
      respond(body) {
        const system = String(body.messages?.find((m) => m.role === "system")?.content ?? "");
        const answer = (text: string) => ({
          content: JSON.stringify({ observe: "", thought: "", action: { result: { action_type: "ANSWER", output: { answer: text } } } }),
        });
        if (system.startsWith("ROLE:planner")) return answer('{"steps": ["A", "B"]}');
        if (system.startsWith("ROLE:aggregator")) return answer("both done");
        return worker((q) => /Your task is task \d of \d: (\w)/.exec(q)?.[1] ?? "?")(body);
      },
    });
    servers.push(s);
    const file = team(
      s.url,
      `  pipeline: { kind: plan_solver, planner: planner, solver: worker, aggregator: aggregator, concurrency: 2 }
  planner: { kind: react, prompt: "ROLE:planner" }
  aggregator: { kind: react, prompt: "ROLE:aggregator" }`,
    );
    const { events, result } = await runPlan(file, "go", { sessionId: "chat-8" });
    expect(result).toMatchObject({ result_type: "answer", answer: "both done" });
    expectSeparateLists(events, "chat-8", 2);
  });
});
