import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../../src/config/load.js";
import type { RunEvent } from "../../../src/events/types.js";
import { runTeam } from "../../../src/engine/run-team.js";
import { startOpenAIServer, type ChatBody } from "../../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../../support/team.js";

const servers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
});

function team(url: string, extra = "", agentExtra = "", tools = "calculator, terminate", modelExtra = ""): string {
  return writeTeam(`version: 1
name: react-test
models:
  default:
    provider: openai
    model: test-model
    base_url: ${url}
    api_key: sk-test-SECRET-react-0123456789
    max_retries: 2
    timeout_ms: 5000
${modelExtra}
agents:
  solver:
    kind: react
    tools: [${tools}]
${agentExtra}
${extra}`);
}

/** The tool results the runtime reported back in the last assistant message. */
function lastToolResults(body: ChatBody): { call_id: string; ok: boolean; result?: { result: number }; error?: string }[] {
  const last = body.messages?.at(-1);
  if (last?.role !== "assistant") return [];
  return (JSON.parse(String(last.content)) as { tool_results?: [] }).tool_results ?? [];
}

async function collect(run: ReturnType<typeof runTeam>): Promise<RunEvent[]> {
  const events: RunEvent[] = [];
  for await (const e of run.events) events.push(e);
  return events;
}

describe("react agent through the openai client and the test server", () => {
  it("answers the circle question from real tool results, with the exact message layout", async () => {
    const server = await startOpenAIServer({
      respond(body, index) {
        if (index === 0) {
          return {
            content: reactReply("CALL_TOOL", {}, "first recursion", "compute both"),
            tool_calls: [
              { id: "c_area", name: "calculator", arguments: { expression: "round(pi * 5^2, 2)" } },
              { id: "c_circ", name: "calculator", arguments: { expression: "round(2 * pi * 5, 2)" } },
            ],
          };
        }
        const results = lastToolResults(body);
        const area = results.find((r) => r.call_id === "c_area")?.result?.result;
        const circ = results.find((r) => r.call_id === "c_circ")?.result?.result;
        return { content: reactReply("ANSWER", { answer: `area ${area}, circumference ${circ}` }) };
      },
    });
    servers.push(server);
    const loaded = await loadTeam(team(server.url));
    const run = runTeam(loaded, { input: "Circle of radius 5: area and circumference?", traceDir: tempDir() });
    const [events, result] = await Promise.all([collect(run), run.result]);

    expect(result.result_type).toBe("answer");
    expect(result.answer).toBe("area 78.54, circumference 31.42");
    expect(server.requests).toHaveLength(2);
    server.requests.forEach((req, i) => {
      const messages = req.body?.messages ?? [];
      expect(messages.map((m) => m.role)).toEqual(["user", "system", ...Array(i).fill("assistant")]);
      expect(messages[0]?.content).toBe("Circle of radius 5: area and circumference?");
      expect(String(messages[1]?.content)).toContain(`Recursion ${i + 1} of at most 30`);
      expect(req.body?.tools).toHaveLength(2);
    });
    // The two calls of one reply ran, and their results were reported in call order.
    expect(lastToolResults(server.requests[1]!.body!).map((r) => r.call_id)).toEqual(["c_area", "c_circ"]);
    const seqs = events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(new Set(seqs).size).toBe(seqs.length);
    const recursions = events.filter((e) => e.type === "recursion.started");
    expect(recursions).toHaveLength(2);
    expect(new Set(recursions.map((e) => e.trace_id)).size).toBe(2);
    // Every event inside a recursion, state changes included, carries that recursion's trace_id.
    let current: string | undefined;
    for (const e of events) {
      if (e.type === "recursion.started") current = e.trace_id;
      if (e.type === "state.changed" || e.type.startsWith("llm.") || e.type.startsWith("tool.")) expect(e.trace_id).toBe(current);
    }
    // The state changes walk the ReAct design's states one by one, each before what it causes.
    const flow = events
      .filter((e) => ["state.changed", "llm.request", "tool.started"].includes(e.type))
      .flatMap((e) => (e.type === "state.changed" ? [...(e.via ?? []), e.to].map((st) => st.split(".").at(-1)) : [e.type]));
    const recursion = ["INPUT", "REACH_MAX_ITERATION", "OBSERVE", "llm.request", "THOUGHT", "ACTION_TYPE"];
    expect(flow).toEqual([
      "INIT",
      ...recursion,
      "CALL_TOOL",
      "tool.started",
      "tool.started",
      "DONE",
      "EXIT",
      "RESULT_TYPE",
      ...recursion,
      "ANSWER",
      "DONE",
      "EXIT",
      "RESULT_TYPE",
      "DONE",
    ]);
    // Transient states travel in one event (`via`) up to the next thing that happens: at most 3 per recursion, not 8.
    expect(events.filter((e) => e.type === "state.changed")).toHaveLength(5);
    expect(events.find((e) => e.type === "state.changed" && e.to.endsWith("CALL_TOOL"))).toMatchObject({
      from: "RECURSION.CALL_LLM.OBSERVE",
      via: ["RECURSION.CALL_LLM.THOUGHT", "RECURSION.CALL_LLM.ACTION_TYPE"],
    });
    expect(events.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer" });
    expect(JSON.stringify(events)).not.toContain("SECRET");
  });

  it("feeds malformed tool arguments back and the model repairs them on the next recursion", async () => {
    const server = await startOpenAIServer({
      respond(body, index) {
        if (index === 0) {
          return { content: null, tool_calls: [{ id: "bad", name: "calculator", arguments: '{"expression": "2 *' }] };
        }
        if (index === 1) {
          const [bad] = lastToolResults(body);
          expect(bad?.ok).toBe(false);
          return { content: null, tool_calls: [{ id: "good", name: "calculator", arguments: { expression: "2 * 21" } }] };
        }
        return { content: reactReply("ANSWER", { answer: String(lastToolResults(body)[0]?.result?.result) }) };
      },
    });
    servers.push(server);
    const run = runTeam(await loadTeam(team(server.url)), { input: "twice 21", traceDir: tempDir() });
    const [events, result] = await Promise.all([collect(run), run.result]);
    expect(result).toMatchObject({ result_type: "answer", answer: "42" });
    const finished = events.filter((e) => e.type === "tool.finished");
    expect(finished.map((e) => e.type === "tool.finished" && e.ok)).toEqual([false, true]);
    const system = String(server.requests[1]?.body?.messages?.[1]?.content);
    expect(system).toContain("failed");
  });

  it("sends a reply that is not the protocol back for REMEND instead of crashing", async () => {
    const server = await startOpenAIServer({
      replies: [{ content: '{"observe": "x", "action": {"result": {"action_type": "DANCE"}}}' }, { content: reactReply("ANSWER", { answer: "fixed" }) }],
    });
    servers.push(server);
    const traceDir = tempDir();
    const run = runTeam(await loadTeam(team(server.url)), { input: "q", traceDir });
    const result = await run.result;
    expect(result).toMatchObject({ result_type: "answer", answer: "fixed" });
    const second = server.requests[1]?.body?.messages ?? [];
    expect(second.map((m) => m.role)).toEqual(["user", "system", "assistant"]);
    expect(String(second[2]?.content)).toContain("action_type must be one of");
    // Why the reply was refused is in its llm.response event, and so in the trace's tree.
    const events = (await import("../../../src/store/sqlite/trace-store.js")).TraceStore.open(traceDir, { create: false });
    const stored = events.eventsOfTask(result.task_id);
    events.close();
    const refused = stored.find((e) => e.type === "llm.response" && e.action_type === "INVALID");
    expect(refused).toMatchObject({ error: expect.stringContaining('action_type must be one of CALL_TOOL, PLAN, REMEND, ANSWER (got "DANCE")') });
    const { renderRunTree } = await import("../../../src/trace/tree.js");
    expect(renderRunTree(stored, { color: false })).toMatch(/INVALID .*\n.*refused: action\.result\.action_type must be one of/);
  });

  it("a prompt naming a variable react does not give fails in one line that lists the variables, before any model call", async () => {
    const server = await startOpenAIServer({ replies: [{ content: reactReply("ANSWER", { answer: "never" }) }] });
    servers.push(server);
    const path = team(server.url, "", '    prompt: "You are {{agent_name}}. State: {{current_stat}}"');
    const result = await runTeam(await loadTeam(path), { input: "q", traceDir: tempDir() }).result;
    expect(result.result_type).toBe("error");
    expect(result.error?.message).toBe(
      'the prompt of agent solver names "current_stat", which a react prompt does not have; ' +
        "its variables: agent_name, description, tool_names, iteration, max_iteration, plan, current_state",
    );
    expect(server.requests).toHaveLength(0);
  });

  it("completes after two 429 replies (the client's retry)", async () => {
    const server = await startOpenAIServer({
      replies: [
        { status: 429, headers: { "retry-after": "0" }, error: { message: "slow down" } },
        { status: 429, headers: { "retry-after": "0" }, error: { message: "slow down" } },
        { content: reactReply("ANSWER", { answer: "ok" }) },
      ],
    });
    servers.push(server);
    const result = await runTeam(await loadTeam(team(server.url)), { input: "q", traceDir: tempDir() }).result;
    expect(result).toMatchObject({ result_type: "answer", answer: "ok" });
    expect(server.requests).toHaveLength(3);
  });

  it("stops after max_iteration model calls with result_type error", async () => {
    const server = await startOpenAIServer({
      respond: () => ({ content: reactReply("PLAN", { plan: "1. think again\n" }) }),
    });
    servers.push(server);
    const path = team(server.url, "", "    max_iteration: 4");
    const run = runTeam(await loadTeam(path), { input: "q", traceDir: tempDir() });
    const [events, result] = await Promise.all([collect(run), run.result]);
    expect(result.result_type).toBe("error");
    expect(result.error?.message).toMatch(/max_iteration \(4\)/);
    expect(result.error?.code).toBe("MAX_ITERATION");
    expect(events.at(-1)).toMatchObject({ type: "run.finished", error_code: "MAX_ITERATION" });
    expect(server.requests).toHaveLength(4);
    expect(events.filter((e) => e.type === "plan.created")).toHaveLength(1);
    expect(events.filter((e) => e.type === "plan.updated")).toHaveLength(3);
    expect(events.find((e) => e.type === "plan.created")).toMatchObject({ steps: ["think again"] });
    // The layout stays linear: one system prompt however deep the recursion.
    const last = server.requests[3]?.body?.messages ?? [];
    expect(last.filter((m) => m.role === "system")).toHaveLength(1);
    expect(last).toHaveLength(5);
    expect(events.filter((e) => e.type === "recursion.started")).toHaveLength(4);
  });

  it("calls another agent as a tool, linking the child's events to the parent step", async () => {
    const server = await startOpenAIServer({
      respond(body) {
        const tools = (body.tools ?? []) as { function: { name: string } }[];
        const isParent = tools.some((t) => t.function.name === "helper");
        const depth = (body.messages ?? []).length - 2;
        if (isParent && depth === 0) {
          return { content: null, tool_calls: [{ id: "ask", name: "helper", arguments: { query: "what is 6*7?" } }] };
        }
        if (isParent) {
          const [res] = lastToolResults(body) as unknown as { result: string }[];
          return { content: reactReply("ANSWER", { answer: `helper says ${res?.result}` }) };
        }
        if (depth === 0) return { content: null, tool_calls: [{ id: "m", name: "calculator", arguments: { expression: "6*7" } }] };
        return { content: reactReply("ANSWER", { answer: String(lastToolResults(body)[0]?.result?.result) }) };
      },
    });
    servers.push(server);
    const path = team(
      server.url,
      `  helper:
    kind: react
    description: Does arithmetic.
    tools: [calculator]`,
      "",
      "helper, terminate",
    );
    const run = runTeam(await loadTeam(path), { input: "ask the helper", traceDir: tempDir() });
    const [events, result] = await Promise.all([collect(run), run.result]);
    expect(result).toMatchObject({ result_type: "answer", answer: "helper says 42" });
    const starts = events.filter((e) => e.type === "agent.started");
    expect(starts.map((e) => e.agent_id)).toEqual(["solver", "helper"]);
    expect(starts[1]?.parent_step_id).toBe(starts[0]?.step_id);
    const childTool = events.find((e) => e.type === "tool.finished" && e.tool === "calculator");
    expect(childTool?.step_id).toBe(starts[1]?.step_id);
  });

  it("streams tokens as llm.delta events when the model streams, and sums usage", async () => {
    const answer = reactReply("ANSWER", { answer: "streamed answer" });
    const server = await startOpenAIServer({ replies: [{ content: answer, usage: { prompt_tokens: 11, completion_tokens: 7 } }] });
    servers.push(server);
    const path = team(server.url, "", "", "calculator, terminate", "    stream: true");
    const run = runTeam(await loadTeam(path), { input: "q", traceDir: tempDir() });
    const [events, result] = await Promise.all([collect(run), run.result]);
    expect(result).toMatchObject({ result_type: "answer", answer: "streamed answer" });
    expect(server.requests[0]?.body?.stream).toBe(true);
    const deltas = events.filter((e) => e.type === "llm.delta");
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((e) => (e.type === "llm.delta" ? e.text : "")).join("")).toBe(answer);
    expect(result.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
  });

  it("runs many teams concurrently in one process without sharing state", async () => {
    const server = await startOpenAIServer({
      respond(body) {
        const input = String(body.messages?.[0]?.content);
        const results = lastToolResults(body);
        if (!results.length) return { content: null, tool_calls: [{ id: "x", name: "calculator", arguments: { expression: `${input} * 2` } }] };
        return { content: reactReply("ANSWER", { answer: String(results[0]?.result?.result) }) };
      },
    });
    servers.push(server);
    const loaded = await loadTeam(team(server.url));
    const traceDir = tempDir();
    const runs = Array.from({ length: 20 }, (_, i) => runTeam(loaded, { input: String(i), traceDir }));
    const results = await Promise.all(runs.map((r) => r.result));
    expect(results.map((r) => r.answer)).toEqual(Array.from({ length: 20 }, (_, i) => String(i * 2)));
    expect(new Set(results.map((r) => r.task_id)).size).toBe(20);
  });
});
