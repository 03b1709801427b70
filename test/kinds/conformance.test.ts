/**
 * The kinds' conformance suite (docs/design/kinds.md#testing-a-kind): every
 * kind of the registry runs the same cases, in the manner of a common test
 * run over every adapter. A new kind passes it or does not ship: `CASES` is
 * keyed by `AgentKind`, so a kind without its case does not compile.
 *
 * Each kind runs its example team (teams/*.yaml) in process through
 * `runTeam` on its scripted model, and over the OpenAI-compatible test
 * server (answering from the same script) on its APIs, Chat Completions,
 * Responses and Anthropic's Messages; over HTTP, also as a spawned CLI killed with SIGKILL and resumed.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AnyStateMachine, StateNode } from "xstate";
import { loadTeam } from "../../src/config/load.js";
import type { AgentKind, ResolvedTeam } from "../../src/config/types.js";
import { runTeam, type RunOptions, type RunResult } from "../../src/engine/run-team.js";
import { addUsage } from "../../src/events/usage.js";
import { type RunEvent, type Usage, ZERO_USAGE } from "../../src/events/types.js";
import { KINDS } from "../../src/kinds/registry.js";
import { createChatClient } from "../../src/models/factory.js";
import type { ChatClient, ChatResponse } from "../../src/models/types.js";
import { runCli, ROOT } from "../support/cli.js";
import { execKilledAt, storedRun } from "../support/kill-resume.js";
import type { OpenAIServer } from "../support/openai-server.js";
import { serverTeam, startScriptServer } from "../support/script-server.js";
import { tempDir } from "../support/team.js";

vi.setConfig({ testTimeout: 120_000 });

const CIRCLE = "What are the area and circumference of a circle with radius 5 meters?";

/** Each kind's example team (its entry agent is of that kind) and a question its script answers. */
const CASES: { [K in AgentKind]: { team: string; question: string } } = {
  react: { team: "circle-react", question: CIRCLE },
  plan_and_solve: { team: "circle-plan", question: CIRCLE },
  plan_and_solve_flow: { team: "research-flow", question: CIRCLE },
  plan_solver: {
    team: "plan-solver",
    question: "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.",
  },
  sop: { team: "safety-sop", question: CIRCLE },
};

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** Run a kind's example team in process; `options` may replace its clients, budget or signal. */
async function run(team: ResolvedTeam, question: string, options: Partial<RunOptions> = {}): Promise<{ result: RunResult; events: RunEvent[] }> {
  const events: RunEvent[] = [];
  const handle = runTeam(team, { input: question, traceDir: tempDir("conformance-"), sinks: [(e) => events.push(e)], ...options });
  const result = await handle.result;
  return { result, events };
}

/** Every state path of a machine (dotted, as `state.changed` names them). */
function statePaths(machine: AnyStateMachine): Set<string> {
  const paths = new Set<string>();
  const visit = (node: StateNode): void => {
    for (const child of Object.values(node.states)) {
      paths.add(child.path.join("."));
      visit(child);
    }
  };
  visit(machine.root);
  return paths;
}

/** A plan's id names the time it was made: the SOP's answer shows it. */
const sameAnswer = (answer: string | undefined) => (answer ?? "").replace(/(SAFE_SOP_v9)-\S+/g, "$1-<id>");

const sum = (usages: Usage[]): Usage => usages.reduce(addUsage, ZERO_USAGE);
const tokens = (u: Usage) => ({ prompt_tokens: u.prompt_tokens, completion_tokens: u.completion_tokens, total_tokens: u.total_tokens });

/** What the kinds' model is: the team's scripted model in process, or the test server over one API (`anthropic`: Anthropic's Messages API, `provider: anthropic`). */
const MODELS = ["scripted", "chat_completions", "responses", "anthropic"] as const;

for (const [kind, model] of (Object.keys(KINDS) as AgentKind[]).flatMap((k) => MODELS.map((m) => [k, m] as const))) {
  const { team: name, question } = CASES[kind];
  const load = async () => {
    let file = `${ROOT}teams/${name}.yaml`;
    if (model !== "scripted") {
      const { server } = await startScriptServer(serverTeam(name, "http://unused").script);
      servers.push(server);
      file = serverTeam(name, server.url, model).file;
    }
    const team = await loadTeam(file);
    expect(team.agents[team.entry]?.kind, `teams/${name}.yaml's entry agent`).toBe(kind);
    return team;
  };

  describe(`kind ${kind} (teams/${name}.yaml) on ${model === "scripted" ? "its scripted model" : `the ${model} API`}`, () => {
    it("events in order: each step opens with agent.started and closes with agent.finished, each tool.started before its tool.finished", async () => {
      const { result, events } = await run(await load(), question);
      expect(result.result_type).toBe("answer");
      const steps = new Map<string, RunEvent[]>();
      for (const e of events) if (e.step_id !== undefined) steps.set(e.step_id, [...(steps.get(e.step_id) ?? []), e]);
      expect(steps.size).toBeGreaterThan(0);
      for (const [, own] of steps) {
        expect(own[0]?.type).toBe("agent.started");
        expect(own.at(-1)?.type).toBe("agent.finished");
      }
      const started = new Set<string>();
      for (const e of events) {
        if (e.type === "tool.started") started.add(e.call_id);
        if (e.type === "tool.finished") expect(started.has(e.call_id), `tool.started before tool.finished of ${e.call_id}`).toBe(true);
      }
      expect(events[0]?.type).toBe("run.started");
      expect(events.at(-1)?.type).toBe("run.finished");
    });

    it("state reporting: state.changed walks the machine's own states, one after the other, from (start)", async () => {
      const team = await load();
      const { events } = await run(team, question);
      const machine = (await KINDS[kind].load()).machine;
      const states = statePaths(machine);
      const entry = events.find((e) => e.type === "agent.started" && e.agent_id === team.entry)?.step_id;
      const changes = events.flatMap((e) => (e.type === "state.changed" && e.step_id === entry ? [e] : []));
      expect(changes.length).toBeGreaterThan(1);
      expect(changes[0]?.from).toBe("(start)");
      for (const [i, change] of changes.entries()) {
        expect(change.machine).toBe(kind);
        for (const state of [...(change.via ?? []), change.to]) expect(states.has(state), `${state} is a state of ${kind}`).toBe(true);
        if (i > 0) expect(change.from).toBe(changes[i - 1]?.to);
      }
      // The machine ends in a final state of its own.
      expect(machine.getStateNodeById(`${machine.id}.${changes.at(-1)?.to}`).type).toBe("final");
    });

    it("usage: each step's usage is its own replies' usage plus its children's, the run's the sum of every reply's", async () => {
      const { result, events } = await run(await load(), question);
      const finished = new Map<string, Usage>();
      for (const e of events) if (e.type === "agent.finished" && e.step_id) finished.set(e.step_id, e.usage);
      for (const [step, usage] of finished) {
        const replies = events.flatMap((e) => (e.type === "llm.response" && e.step_id === step ? [e.usage] : []));
        const children = events.flatMap((e) => (e.type === "agent.finished" && e.parent_step_id === step ? [e.usage] : []));
        expect(tokens(usage), `usage of step ${step}`).toEqual(tokens(sum([...replies, ...children])));
      }
      const all = sum(events.flatMap((e) => (e.type === "llm.response" ? [e.usage] : [])));
      expect(all.total_tokens).toBeGreaterThan(0);
      expect(tokens(result.usage)).toEqual(tokens(all));
    });

    it("abort: the run's signal fired at its first model request ends it as interrupted, without a hang", async () => {
      const abort = new AbortController();
      const team = await load();
      const events: RunEvent[] = [];
      const handle = runTeam(team, {
        input: question,
        traceDir: tempDir("conformance-"),
        signal: abort.signal,
        sinks: [
          (e) => {
            events.push(e);
            if (e.type === "llm.request") abort.abort();
          },
        ],
      });
      const result = await handle.result;
      expect(result).toMatchObject({ result_type: "error", error: { code: "ABORTED", message: "interrupted" }, interrupted: true });
      expect(events.filter((e) => e.type === "llm.response")).toHaveLength(0);
      expect(events.at(-1)).toMatchObject({ type: "run.finished", result_type: "error" });
    });

    it("budget: a team budget of one model call stops the run with the budget's error", async () => {
      const team = await load();
      const { result, events } = await run(team, question, { budget: { max_model_calls: 1 } });
      expect(result.result_type).toBe("error");
      expect(result.error?.message).toMatch(/^budget reached: the team's max_model_calls is 1/);
      expect(result.error?.code).toBe("BUDGET");
      expect(events.at(-1)).toMatchObject({ type: "run.finished", error_code: "BUDGET" });
      expect(events.filter((e) => e.type === "llm.response")).toHaveLength(1);
    });

    it("a cut-off reply (finish_reason length) is never taken as an answer: the run goes on to the script's answer", async () => {
      const clean = await run(await load(), question);
      expect(clean.result.result_type).toBe("answer");
      // A fresh script for the second run: over HTTP, the first consumed the server's.
      const team = await load();
      let cut = false;
      const cutOnce = (inner: ChatClient): ChatClient => ({
        model: inner.model,
        ...(inner.replayed ? { replayed: (request) => inner.replayed?.(request) } : {}),
        chat: async (request): Promise<ChatResponse> => {
          if (cut) return inner.chat(request);
          cut = true;
          const usage = { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 };
          return { content: '{"observe": "The answer is 4', tool_calls: [], usage, finish_reason: "length" };
        },
      });
      const { result, events } = await run(team, question, { createClient: (config) => cutOnce(createChatClient(config)) });
      expect(events.find((e) => e.type === "llm.response")).toMatchObject({ finish_reason: "length" });
      expect(result.result_type).toBe("answer");
      expect(sameAnswer(result.answer)).toBe(sameAnswer(clean.result.answer));
      for (const e of events) if (e.type === "agent.finished") expect(e.answer ?? "").not.toContain("The answer is 4");
    });

    if (model === "scripted") return;
    it("resume after kill: a CLI run killed with SIGKILL midway resumes to the uninterrupted answer, no reply asked twice", async () => {
      const baseline = await startScriptServer(serverTeam(name, "http://unused").script);
      servers.push(baseline.server);
      const team0 = serverTeam(name, baseline.server.url, model);
      const clean = await runCli(["exec", team0.file, question, "--trace-dir", tempDir()]);
      expect(clean.code, clean.stderr).toBe(0);
      const total = baseline.arrivals.length;
      expect(total).toBeGreaterThan(2);

      const server = await startScriptServer(team0.script);
      servers.push(server.server);
      const team = serverTeam(name, server.server.url, model);
      const traceDir = tempDir();
      await execKilledAt([team.file, question, "--trace-dir", traceDir], server, Math.floor(total / 2));
      const before = storedRun(traceDir);
      const asked = server.arrivals.length;
      const resumed = await runCli(["resume", before.task_id.slice(0, 8), "--trace-dir", traceDir]);
      expect(resumed.stderr).toBe("");
      expect(resumed.code).toBe(0);
      expect(sameAnswer(resumed.stdout)).toBe(sameAnswer(clean.stdout));
      // Replies committed before the kill were not asked for again; the rest were asked once.
      expect(before.replies + (server.arrivals.length - asked)).toBe(total);
      const after = storedRun(traceDir);
      expect(after.events.at(-1)).toMatchObject({ type: "run.finished", result_type: "answer" });
    });
  });
}
