import { afterEach, describe, expect, it } from "vitest";
import { loadTeam, runTeam, type RunEvent } from "../../../src/index.js";
import { TraceStore } from "../../../src/store/sqlite/trace-store.js";
import { type ChatBody, type OpenAIServer, type Reply, startOpenAIServer } from "../../support/openai-server.js";
import { writeTeam } from "../../support/team.js";
import { answer, ofType, traceDir } from "../../support/flows.js";

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const isHelper = (body: ChatBody) => String(body.messages?.find((m) => m.role === "system")?.content ?? "").startsWith("ROLE:helper");

/** A plan_and_solve agent that calls the `helper` agent as a tool, and the helper (react) it calls. */
function team(url: string): string {
  return writeTeam(`version: 1
name: agents-as-tools
entry: boss
models:
  default: { provider: openai, model: test-model, base_url: "${url}", api_key: test-key, max_retries: 0, timeout_ms: 20000 }
agents:
  boss: { kind: plan_and_solve, tools: [write_todos, update_todo_item, helper, terminate] }
  helper: { kind: react, description: Answers one question., prompt: "ROLE:helper" }
`);
}

async function collect(file: string, options: { traceDir: string; signal?: AbortSignal; onEvent?: (e: RunEvent) => void }) {
  const run = runTeam(await loadTeam(file), { input: "ask the helper", ...options });
  const events: RunEvent[] = [];
  for await (const e of run.events) {
    events.push(e);
    options.onEvent?.(e);
  }
  return { events, result: await run.result };
}

describe("agents as tools", () => {
  it("offers the child as a {query} tool, links its events and traces to the caller's step", async () => {
    server = await startOpenAIServer({
      respond(body, index): Reply {
        if (isHelper(body)) return answer("42");
        // A plan first: a plan_and_solve model that skips it is reminded instead of served.
        if (index === 0)
          return {
            content: null,
            tool_calls: [{ id: "plan", name: "write_todos", arguments: { todos: [{ content: "Ask the helper", status: "completed" }] } }],
          };
        if (index === 1) return { content: null, tool_calls: [{ id: "ask", name: "helper", arguments: { query: "what is 6*7?" } }] };
        return { content: null, tool_calls: [{ id: "t", name: "terminate", arguments: { answer: "the helper says 42" } }] };
      },
    });
    const dir = traceDir();
    const { events, result } = await collect(team(server.url), { traceDir: dir });
    expect(result).toMatchObject({ result_type: "answer", answer: "the helper says 42" });

    const offered = (server.chatRequests[0]?.body?.tools ?? []) as { function: { name: string; parameters: unknown } }[];
    expect(offered.find((t) => t.function.name === "helper")?.function.parameters).toMatchObject({ required: ["query"] });
    const [boss, helper] = ofType(events, "agent.started");
    expect(helper).toMatchObject({ agent_id: "helper", input: "what is 6*7?", parent_step_id: boss?.step_id });
    const childEvents = events.filter((e) => e.agent_id === "helper");
    expect(childEvents.every((e) => e.step_id === helper?.step_id && e.parent_step_id === boss?.step_id)).toBe(true);
    expect(ofType(events, "tool.finished").find((e) => e.tool === "helper")).toMatchObject({ ok: true, result: "42" });

    const store = TraceStore.open(dir);
    try {
      const stored = store.eventsOfTask(result.task_id).filter((e) => e.agent_id === "helper");
      expect(stored.length).toBe(childEvents.length);
      expect(stored.every((e) => e.parent_step_id === boss?.step_id)).toBe(true);
    } finally {
      store.close();
    }
  });

  it("cancels the child with the caller: it ends interrupted before the run does", async () => {
    server = await startOpenAIServer({
      respond(body, index): Reply {
        if (isHelper(body)) return { ...answer("far too late"), delay_ms: 60_000 };
        // A plan first: until there is one, a plan_and_solve agent's work tools are refused.
        if (index === 0) return { content: null, tool_calls: [{ id: "plan", name: "write_todos", arguments: { todos: [{ content: "Ask the helper" }] } }] };
        return { content: null, tool_calls: [{ id: "ask", name: "helper", arguments: { query: "think hard" } }] };
      },
    });
    const controller = new AbortController();
    const started = Date.now();
    const { events, result } = await collect(team(server.url), {
      traceDir: traceDir(),
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === "llm.request" && e.agent_id === "helper") setTimeout(() => controller.abort(), 100);
      },
    });
    // Cancelled, not waited out (the helper's reply was a minute away).
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(result).toMatchObject({ result_type: "error", error: { code: "ABORTED", message: "interrupted" }, interrupted: true });

    const finished = ofType(events, "agent.finished");
    const helperDone = finished.find((e) => e.agent_id === "helper");
    expect(helperDone?.result_type).toBe("error");
    // The child's end is recorded before the run's: nothing of it runs on after the run has finished.
    const types = events.map((e) => `${e.type}:${e.agent_id}`);
    expect(types.indexOf("agent.finished:helper"), types.join(" ")).toBeLessThan(types.indexOf("agent.finished:boss"));
    expect(events.at(-1)?.type).toBe("run.finished");
    expect(ofType(events, "tool.finished").find((e) => e.tool === "helper")?.ok).toBe(false);
    // The helper asked its model once and was not asked again.
    expect(server.chatRequests.filter((r) => r.body && isHelper(r.body))).toHaveLength(1);
  });
});
