/**
 * Every agent kind against every server dialect (docs/model-servers.md), over real
 * HTTP with the `openai` client, against a strict test server that refuses
 * any transcript OpenAI, DeepSeek or vLLM would refuse. Each run must reach
 * the right answer (the calculator's 42) and every request it made must be
 * acceptable.
 */
import { afterAll, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { startOpenAIServer, strictProblems, type ChatBody, type Dialect, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { chatBodyOf } from "../support/openai-server-responses.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

type Handler = (n: number, body: ChatBody) => Reply;

/** The texts of a request (system and user), where the agent's prompt is, whatever the layout. */
const texts = (body: ChatBody) => {
  const of = (role: string) => (body.messages ?? []).filter((m) => m.role === role).map((m) => String(m.content ?? ""));
  return [...of("system"), ...of("user")];
};
const agentOf = (body: ChatBody) =>
  texts(body)
    .map((t) => /^You are (\w+)/.exec(t)?.[1])
    .find(Boolean) ?? "(none)";
const planIdOf = (body: ChatBody) =>
  texts(body)
    .map((t) => /Plan: (W-\S+)/.exec(t)?.[1])
    .find(Boolean) ?? "missing";
const hasToolResult = (body: ChatBody) => (body.messages ?? []).some((m) => m.role === "tool");

const call = (name: string, args: Record<string, unknown>, id: string): Reply => ({
  content: reactReply("CALL_TOOL", {}, "", `I call ${name}.`),
  tool_calls: [{ id, name, arguments: args }],
});
const answer = (value: unknown): Reply => ({ content: reactReply("ANSWER", { answer: value }) });
/** A react agent that computes 6*7 with the calculator, then answers. */
const computes: Handler = (n) => (n === 0 ? call("calculator", { expression: "6*7" }, "c_calc") : answer("42"));

interface Case {
  kind: string;
  team: string;
  handlers: Record<string, Handler>;
}

const model = (url: string, stream: boolean, api: string) => `
models:
  default:
    provider: openai
    model: test-model
    api: ${api}
    base_url: ${url}
    api_key: sk-matrix
    max_retries: 0
    timeout_ms: 10000
    stream: ${stream}
`;

const CASES: Case[] = [
  {
    kind: "react",
    team: `agents:\n  solver:\n    kind: react\n    tools: [calculator]\n`,
    handlers: { solver: computes },
  },
  {
    kind: "plan_and_solve",
    team: `agents:\n  solver:\n    kind: plan_and_solve\n    tools: [calculator]\n`,
    handlers: {
      solver: (n, body) =>
        n === 0 || !hasToolResult(body)
          ? { content: null, tool_calls: [{ id: "c_calc", name: "calculator", arguments: { expression: "6*7" } }] }
          : { content: "The answer is 42." },
    },
  },
  {
    kind: "plan_and_solve_flow",
    team: `agents:
  flow:
    kind: plan_and_solve_flow
    planner: planner
    executor: executor
  planner:
    kind: react
  executor:
    kind: react
    tools: [calculator]
`,
    handlers: { planner: () => answer({ steps: ["Compute 6*7"] }), executor: computes, flow: () => ({ content: "The answer is 42." }) },
  },
  {
    kind: "plan_solver",
    team: `agents:
  pipeline:
    kind: plan_solver
    planner: planner
    solver: worker
    aggregator: aggregator
  planner:
    kind: react
  worker:
    kind: react
    tools: [calculator]
  aggregator:
    kind: react
`,
    handlers: { planner: () => answer({ steps: ["Compute 6*7"] }), worker: computes, aggregator: () => answer("42") },
  },
  {
    kind: "sop",
    team: `agents:
  review:
    kind: sop
    workflow: W
    strategist: strategist
  strategist:
    kind: react
    max_iteration: 12
    tools: [update_task_status, worker]
  worker:
    kind: react
    tools: [calculator]
workflows:
  W:
    name: Compute
    steps:
      - step_id: s1
        name: Compute
        tasks:
          - { task_id: t1, name: Multiply, assignee: worker, description: Compute 6*7. }
`,
    handlers: {
      strategist: (n, body) => {
        const plan_id = planIdOf(body);
        if (n === 0) return call("update_task_status", { plan_id, task_id: "t1", status: "inprogress" }, "c_start");
        if (n === 1) return call("worker", { query: "Compute 6*7" }, "c_worker");
        if (n === 2) return call("update_task_status", { plan_id, task_id: "t1", status: "completed", result_summary: "42" }, "c_done");
        return answer("42");
      },
      worker: computes,
    },
  },
];

interface Variant {
  name: string;
  dialect?: Dialect;
  stream?: boolean;
  /** Every agent's first reply is cut off at the token limit. */
  cutOff?: boolean;
  /** Every reply carries reasoning. */
  reasoning?: boolean;
  /** @default "chat_completions" */
  api?: "responses";
}

/** The server habits, each tried with whole replies and streamed (the default, `stream: true`). */
const HABITS: Variant[] = [
  { name: "<think> blocks in the content", reasoning: true, dialect: { reasoning: "think_tags" } },
  { name: "reasoning_content (refused if sent back)", reasoning: true, dialect: { reasoning: "reasoning_content" } },
  { name: "thinking parts in a list content (Mistral)", reasoning: true, dialect: { reasoning: "thinking_parts" } },
  { name: "roles must alternate", dialect: { roles: "alternate" } },
  { name: "no system role", dialect: { roles: "no_system" } },
  { name: "tool calls without ids", dialect: { tool_ids: "missing" } },
  { name: "tool calls with one repeated id", dialect: { tool_ids: "duplicate" } },
  { name: "arguments as objects", dialect: { object_arguments: true } },
  { name: "tool calls written into the content", dialect: { tool_calls_in_content: true } },
  { name: "no usage", dialect: { usage: "missing" } },
  { name: "replies cut off at the token limit", cutOff: true },
];

/** The same over the Responses API: reasoning as items carried back encrypted, and the habits that apply to it. */
const RESPONSES_HABITS: Variant[] = [
  { name: "plain", api: "responses" },
  { name: "reasoning items", api: "responses", reasoning: true },
  { name: "roles must alternate", api: "responses", dialect: { roles: "alternate" } },
  { name: "tool calls written into the content", api: "responses", dialect: { tool_calls_in_content: true } },
  { name: "no usage", api: "responses", dialect: { usage: "missing" } },
  { name: "replies cut off at the token limit", api: "responses", cutOff: true },
];

const bothWays = (habits: Variant[], prefix = "") =>
  habits.flatMap((v) => [
    { ...v, name: `${prefix}${v.name}`, stream: false },
    { ...v, name: `${prefix}${v.name}, streamed`, stream: true },
  ]);
const VARIANTS: Variant[] = [...bothWays(HABITS), ...bothWays(RESPONSES_HABITS, "Responses API: ")];

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

async function run(c: Case, v: Variant) {
  const counts = new Map<string, number>();
  const server = await startOpenAIServer({
    strict: true,
    ...(v.dialect ? { dialect: v.dialect } : {}),
    respond(body) {
      const agent = agentOf(body);
      const n = counts.get(agent) ?? 0;
      counts.set(agent, n + 1);
      if (v.cutOff && n === 0) return { content: '{"observe": "I will', finish_reason: "length" };
      const handler = c.handlers[agent] ?? c.handlers["flow"];
      if (!handler) return { status: 400, error: { message: `test: no handler for agent ${agent}` } };
      const reply = handler(v.cutOff ? n - 1 : n, body);
      return v.reasoning && !("status" in reply) ? { ...reply, reasoning: `Let me think about ${agent}'s turn.` } : reply;
    },
  });
  servers.push(server);
  const file = writeTeam(`version: 1\nname: matrix\n${model(server.url, v.stream ?? true, v.api ?? "chat_completions")}${c.team}`, {}, tempDir("matrix-"));
  const team = await loadTeam(file);
  const events: RunEvent[] = [];
  const result = await runTeam(team, { input: "What is 6 times 7?", traceDir: tempDir("matrix-trace-"), sinks: [(e) => events.push(e)] }).result;
  return { result, events, server };
}

/** The conversation of every request the run made, as chat bodies (a Responses request read as one). */
const sent = (server: OpenAIServer): ChatBody[] => [
  ...server.chatRequests.map((r) => r.body ?? {}),
  ...server.responsesRequests.map((r) => chatBodyOf(r.body ?? {})),
];

describe.each(CASES)("$kind against real servers' dialects", (c) => {
  it.each(VARIANTS)("$name", async (v) => {
    const { result, events, server } = await run(c, v);
    expect(result.error, result.error?.message).toBeUndefined();
    expect(result.answer).toMatch(/42/);
    expect(v.api === "responses" ? server.chatRequests : server.responsesRequests).toEqual([]);
    // Every request the run made is one a strict server accepts (the layout dialects refuse the first).
    const refused = sent(server).filter((body) => strictProblems(body).length > 0);
    expect(refused.map((body) => strictProblems(body)[0])).toEqual([]);
    // A layout refused once is said once; react's [user, system, ...] is refused by both templates.
    const notices = events.filter((e) => e.type === "llm.notice");
    expect(notices.length).toBeLessThanOrEqual(v.dialect?.roles ? 1 : 0);
    if (v.dialect?.roles && c.kind === "react") expect(notices).toHaveLength(1);
    const responses = events.filter((e) => e.type === "llm.response");
    if (v.reasoning) {
      expect(responses.every((e) => e.type === "llm.response" && e.reasoning?.startsWith("Let me think"))).toBe(true);
      // Reasoning is never sent back, nor parsed: no request carries it.
      expect(sent(server).some((body) => JSON.stringify(body).includes("Let me think"))).toBe(false);
    }
    if (v.reasoning && v.api === "responses") {
      // The reasoning items come back, encrypted, with the replies they came with (a strict server knows its own).
      const carried = server.responsesRequests.filter((r) => ((r.body?.["input"] ?? []) as Array<{ type?: string }>).some((i) => i.type === "reasoning"));
      expect(carried.length).toBeGreaterThan(0);
    }
    if (v.dialect?.usage === "missing") {
      const finished = events.find((e) => e.type === "run.finished");
      expect(finished?.type === "run.finished" && finished.usage.unknown).toBe(responses.length);
    }
    if (v.cutOff) {
      const cut = responses.filter((e) => e.type === "llm.response" && e.finish_reason === "length");
      expect(cut.length).toBeGreaterThan(0);
      // What went back to the model about it says so.
      expect(sent(server).some((body) => JSON.stringify(body).includes("cut off at the token limit"))).toBe(true);
    }
  });
});
