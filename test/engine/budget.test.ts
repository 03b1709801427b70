/** Budgets (docs/budgets.md): one account across nested agents and parallel solvers, checked before each call. */
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const agentOf = (body: ChatBody) => /^You are (\w+)/.exec(String(body.messages?.find((m) => m.role === "system")?.content ?? ""))?.[1] ?? "?";
const answered = (body: ChatBody) => (body.messages ?? []).some((m) => m.role === "assistant");
const calc = (id: string): Reply => ({
  content: reactReply("CALL_TOOL", {}),
  tool_calls: [{ id, name: "calculator", arguments: { expression: "6*7" } }],
  usage: { prompt_tokens: 1000, completion_tokens: 100 },
});
const answer = (text: string): Reply => ({ content: reactReply("ANSWER", { answer: text }), usage: { prompt_tokens: 1000, completion_tokens: 100 } });

async function serve(respond: (body: ChatBody) => Reply) {
  const server = await startOpenAIServer({ respond });
  servers.push(server);
  return server;
}

const model = (url: string, extra = "") => `models:
  default: { provider: openai, model: m, base_url: "${url}", api_key: sk-budget-0123456789, max_retries: 0${extra} }
`;

describe("budgets", () => {
  it("stops a run before the model call past the team's max_model_calls: exit 1, the limit and the figure named", async () => {
    // A model that never answers: it calls the calculator forever.
    let n = 0;
    const server = await serve(() => calc(`c${n++}`));
    const team = writeTeam(
      `version: 1\nname: b\nbudget: { max_model_calls: 3 }\n${model(server.url)}agents:\n  solver: { kind: react, tools: [calculator] }\n`,
    );
    const run = await runCli(["exec", team, "go", "--trace-dir", tempDir()]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/budget reached: the team's max_model_calls is 3 and 3 model calls made/);
    expect(server.chatRequests).toHaveLength(3);
  });

  it("holds one account across agents called as tools; an agent's own budget stops only its step", async () => {
    const server = await serve((body) => {
      const agent = agentOf(body);
      if (agent === "helper") return calc(`h${Math.random()}`); // the helper never answers
      return answered(body)
        ? answer("done without help")
        : {
            content: reactReply("CALL_TOOL", {}),
            tool_calls: [{ id: "ask", name: "helper", arguments: { query: "help" } }],
            usage: { prompt_tokens: 1000, completion_tokens: 100 },
          };
    });
    const team = writeTeam(`version: 1
name: nested
${model(server.url, ", price: { input_per_mtok: 1, output_per_mtok: 10 }")}agents:
  boss: { kind: react, tools: [helper] }
  helper: { kind: react, tools: [calculator], budget: { max_model_calls: 2 } }
`);
    const events: RunEvent[] = [];
    const result = await runTeam(await loadTeam(team), { input: "go", traceDir: tempDir(), sinks: [(e) => events.push(e)] }).result;
    // The helper's budget ended the helper; the boss saw a tool error and answered.
    expect(result.answer).toBe("done without help");
    const helperCall = events.find((e) => e.type === "tool.finished" && e.tool === "helper");
    expect(helperCall).toMatchObject({ ok: false, error: expect.stringMatching(/budget reached: agent helper's max_model_calls is 2 and 2 model calls made/) });
    expect(server.chatRequests.filter((r) => agentOf(r.body!) === "helper")).toHaveLength(2);

    // The team's cost budget counts the helper's calls too: 1000 in + 100 out at $1/$10 per Mtok is $0.002 a call.
    const costly = writeTeam(`version: 1
name: nested-cost
budget: { max_cost_usd: 0.005 }
${model(server.url, ", price: { input_per_mtok: 1, output_per_mtok: 10 }")}agents:
  boss: { kind: react, tools: [helper] }
  helper: { kind: react, tools: [calculator] }
`);
    const before = server.chatRequests.length;
    const capped = await runTeam(await loadTeam(costly), { input: "go", traceDir: tempDir() }).result;
    expect(capped.result_type).toBe("error");
    expect(capped.error?.message).toMatch(/budget reached: the team's max_cost_usd is 0\.005 and \$0\.0060 spent/);
    expect(server.chatRequests.length - before).toBe(3); // boss 1, helper 2: the third call reached $0.006
  });

  it("holds across parallel solvers: the team's max_tool_calls counts every solver's calls", async () => {
    const server = await serve((body) => {
      const agent = agentOf(body);
      if (agent === "planner") return answer(JSON.stringify({ steps: ["a", "b", "c", "d"] }));
      if (agent === "aggregator") return answer("all four");
      return answered(body) ? answer("42") : calc(`s${Math.random()}`);
    });
    const team = writeTeam(`version: 1
name: parallel
budget: { max_tool_calls: 2 }
${model(server.url)}agents:
  pipeline: { kind: plan_solver, planner: planner, solver: worker, aggregator: aggregator, concurrency: 4 }
  planner: { kind: react }
  worker: { kind: react, tools: [calculator] }
  aggregator: { kind: react }
`);
    const events: RunEvent[] = [];
    const result = await runTeam(await loadTeam(team), { input: "go", traceDir: tempDir(), sinks: [(e) => events.push(e)] }).result;
    expect(events.filter((e) => e.type === "tool.started")).toHaveLength(2);
    expect(result.result_type).toBe("error");
    expect(result.error?.message).toMatch(/budget reached: the team's max_tool_calls is 2 and 2 tool calls made/);
  });
});
