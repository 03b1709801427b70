/**
 * Structured output where the server has it (docs/model-servers.md#structured-output):
 * planners and replanners ask for their schema as `response_format`
 * (json_schema, strict) from a model marked `structured_output: true`, and fall
 * back to the instructions alone when the server refuses it; on both APIs
 * (a Responses request read as a chat body, its `text.format` as
 * `response_format`), streamed (the default) and not.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { chatBodyOf } from "../support/openai-server-responses.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const systemOf = (body: ChatBody) => String(body.messages?.find((m) => m.role === "system")?.content ?? "");
const agentOf = (body: ChatBody) => /^You are (\w+)/.exec(systemOf(body))?.[1] ?? "?";
const answer = (value: unknown): Reply => ({ content: reactReply("ANSWER", { answer: value }) });

function respond(refuse: boolean) {
  const replans = { n: 0 };
  return (body: ChatBody): Reply => {
    if (refuse && body.response_format !== undefined) return { status: 400, error: { message: "response_format json_schema is not supported by this model" } };
    const agent = agentOf(body);
    if (agent === "planner") return answer({ steps: ["Compute 6*7"] });
    if (agent === "executor") {
      return (body.messages ?? []).some((m) => m.role === "assistant")
        ? answer("42")
        : { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "c1", name: "calculator", arguments: { expression: "6*7" } }] };
    }
    if (agent === "replanner") return answer(replans.n++ === 0 ? { action: { response: "The answer is 42." } } : { action: { steps: ["again"] } });
    return { status: 400, error: { message: `no handler for ${agent}` } };
  };
}

interface Way {
  api: "chat_completions" | "responses";
  stream: boolean;
}

async function run(way: Way, structured: boolean, refuse = false) {
  const server = await startOpenAIServer({ strict: true, respond: respond(refuse) });
  servers.push(server);
  const file = writeTeam(`version: 1
name: structured
models:
  default:
    provider: openai
    model: m
    base_url: ${server.url}
    api_key: sk-structured
    max_retries: 0
    api: ${way.api}
    stream: ${way.stream}
    structured_output: ${structured}
agents:
  flow:
    kind: plan_and_solve_flow
    planner: planner
    executor: executor
    replanner: replanner
    enable_replanner: true
  planner: { kind: react }
  replanner: { kind: react }
  executor: { kind: react, tools: [calculator] }
`);
  const events: RunEvent[] = [];
  const result = await runTeam(await loadTeam(file), { input: "6*7?", traceDir: tempDir("structured-"), sinks: [(e) => events.push(e)] }).result;
  // Every request as a chat body, whichever API it went to.
  const bodies = () => [...server.chatRequests.map((r) => r.body!), ...server.responsesRequests.map((r) => chatBodyOf(r.body!))];
  expect(way.api === "responses" ? server.chatRequests : server.responsesRequests).toEqual([]);
  expect(bodies().every((b) => (b.stream === true) === way.stream)).toBe(true);
  return { result, events, bodies };
}

type Node = Record<string, unknown>;
/** What OpenAI's strict mode demands of a schema, checked everywhere in it. */
function strictViolations(node: unknown, at = "#"): string[] {
  if (Array.isArray(node)) return node.flatMap((n, i) => strictViolations(n, `${at}/${i}`));
  if (node === null || typeof node !== "object") return [];
  const n = node as Node;
  const out: string[] = [];
  if ("oneOf" in n) out.push(`${at} uses oneOf`);
  for (const k of ["minLength", "minItems", "pattern", "format", "$schema", "$id"]) if (k in n) out.push(`${at} has ${k}`);
  if (n.type === "object") {
    if (n.additionalProperties !== false) out.push(`${at} allows additional properties`);
    const keys = Object.keys((n.properties ?? {}) as Node).sort();
    if (JSON.stringify([...((n.required ?? []) as string[])].sort()) !== JSON.stringify(keys)) out.push(`${at} does not require all its properties`);
  }
  for (const [k, v] of Object.entries(n)) out.push(...strictViolations(v, `${at}/${k}`));
  return out;
}

const WAYS: Array<Way & { name: string }> = [
  { name: "Chat Completions, streamed", api: "chat_completions", stream: true },
  { name: "Chat Completions, whole replies", api: "chat_completions", stream: false },
  { name: "Responses API, streamed", api: "responses", stream: true },
  { name: "Responses API, whole replies", api: "responses", stream: false },
];

describe.each(WAYS)("structured output, $name", (way) => {
  it("asks planners and replanners for their schema as strict json_schema, and not the executor", async () => {
    const { result, bodies } = await run(way, true);
    expect(result.answer).toBe("The answer is 42.");
    const byAgent = (name: string) => bodies().filter((b) => agentOf(b) === name);
    for (const name of ["planner", "replanner"]) {
      const format = byAgent(name)[0]?.response_format as { type: string; json_schema: { name: string; strict: boolean; schema: Node } };
      expect(format, name).toMatchObject({ type: "json_schema", json_schema: { name: "react_answer", strict: true } });
      expect(strictViolations(format.json_schema.schema), name).toEqual([]);
    }
    const planSchema = JSON.stringify((byAgent("planner")[0]!.response_format as { json_schema: unknown }).json_schema);
    expect(planSchema).toContain('"steps"');
    const actionSchema = JSON.stringify((byAgent("replanner")[0]!.response_format as { json_schema: unknown }).json_schema);
    expect(actionSchema).toContain('"anyOf"');
    expect(actionSchema).toContain('"$ref":"#/$defs/Response"');
    expect(byAgent("executor").every((b) => b.response_format === undefined)).toBe(true);
  });

  it("asks nothing of a model not marked structured_output", async () => {
    const { result, bodies } = await run(way, false);
    expect(result.answer).toBe("The answer is 42.");
    expect(bodies().every((b) => b.response_format === undefined)).toBe(true);
  });

  it("falls back to the instructions alone when the server refuses response_format, saying so once", async () => {
    const { result, events, bodies } = await run(way, true, true);
    expect(result.answer).toBe("The answer is 42.");
    const notices = events.filter((e) => e.type === "llm.notice");
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ notice: "structured_output" });
    expect(notices[0]?.type === "llm.notice" && notices[0].message).toMatch(/refused response_format .*format instructions alone/);
    // One refused request; every later one goes without.
    expect(bodies().filter((b) => b.response_format !== undefined)).toHaveLength(1);
  });
});
