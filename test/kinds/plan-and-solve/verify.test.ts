import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../../src/events/types.js";
import { TraceStore } from "../../../src/store/sqlite/trace-store.js";
import { listedParts, missingParts, numbersIn } from "../../../src/kinds/plan-and-solve/answer-checks.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../../support/openai-server.js";
import { tempDir, writeTeam } from "../../support/team.js";
import { call, calls, planTeam, runPlan, todos, walked } from "../../support/plan-and-solve.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
});

const QUESTION = "What are the area and circumference of a circle with radius 5 meters?";
const verified = (events: RunEvent[]) => events.filter((e): e is Extract<RunEvent, { type: "answer.verified" }> => e.type === "answer.verified");
const lastTool = (body: ChatBody) => String(body.messages?.filter((m) => m.role === "tool").at(-1)?.content ?? "");

/** Plan two items, compute area and circumference with the real calculator, then answer with `answers[k]` on the k-th try. */
function solver(answers: string[], seen: string[]): (body: ChatBody) => Reply {
  let n = 0;
  return (body) => {
    const step = n++;
    if (step === 0) return calls(call("plan", "write_todos", todos("Compute the area and circumference", "Answer with units")));
    if (step === 1) {
      return calls(
        call("s1", "update_todo_item", { index: 1, status: "in_progress" }),
        call("area", "calculator", { expression: "round(pi * 5^2, 2)" }),
        call("circ", "calculator", { expression: "round(2 * pi * 5, 2)" }),
      );
    }
    if (step === 2) {
      return calls(
        call("d1", "update_todo_item", { index: 1, status: "completed" }),
        call("s2", "update_todo_item", { index: 2, status: "in_progress" }),
        call("d2", "update_todo_item", { index: 2, status: "completed" }),
      );
    }
    seen.push(lastTool(body));
    const answer = answers[step - 3] ?? answers.at(-1)!;
    return calls(call(`t${step}`, "terminate", { answer }));
  };
}

describe("VERIFYING checks the answer against the recorded results", () => {
  it("asks about an area no tool computed, sends it back to SOLVING, and takes the corrected answer", async () => {
    const seen: string[] = [];
    const respond = solver(["The area is 100 m² and the circumference 31.42 m.", "The area is 78.54 m² and the circumference 31.42 m."], seen);
    const server = await startOpenAIServer({ respond });
    servers.push(server);
    const traceDir = tempDir();
    const { result, events } = await runPlan(planTeam(server.url), QUESTION, { traceDir });

    expect(result).toMatchObject({ result_type: "answer", answer: "The area is 78.54 m² and the circumference 31.42 m." });
    // The model saw the problem as its terminate call's error, naming the calculator's figure.
    expect(seen[1]).toContain("Before this answer is given, please check (1 of 1)");
    expect(seen[1]).toContain("100 m² is not a result of any tool; compute it or correct it");
    expect(verified(events).map((e) => [e.method, e.verdict, e.round])).toEqual([
      ["checks", "fail", 1],
      ["checks", "pass", 2],
    ]);
    // The refused terminate never ran; the run went back to SOLVING, then verified again.
    const terminates = events.filter((e): e is Extract<RunEvent, { type: "tool.finished" }> => e.type === "tool.finished" && e.tool === "terminate");
    expect(terminates.map((e) => e.ok)).toEqual([false, true]);
    const states = walked(events, "plan_and_solve");
    const rejectedAt = states.indexOf("VERIFYING.ValidateAnswer");
    expect(states[rejectedAt + 1]).toBe("SOLVING.CheckNextTask");
    expect(states.at(-1)).toBe("FINISHED");
    // The verdicts are part of the stored trace.
    const store = TraceStore.open(traceDir, { create: false });
    expect(store.eventsOfTask(result.task_id).filter((e) => e.type === "answer.verified")).toHaveLength(2);
    store.close();
  });

  it("ends the run with its answer, marked unverified, when the answer stays wrong after its one question", async () => {
    const seen: string[] = [];
    const server = await startOpenAIServer({ respond: solver(["The area is 100 m²."], seen) });
    servers.push(server);
    const { result, events } = await runPlan(planTeam(server.url), QUESTION);
    expect(result).toMatchObject({ result_type: "answer", answer: "The area is 100 m²." });
    expect(result.verification).toEqual({ status: "failed", findings: ["100 m² is not a result of any tool; compute it or correct it"] });
    const finished = events.find((e) => e.type === "run.finished");
    expect(finished).toMatchObject({ result_type: "answer", answer: "The area is 100 m².", verification: { status: "failed" } });
    expect(verified(events).map((e) => e.verdict)).toEqual(["fail", "fail"]);
    expect(walked(events, "plan_and_solve").at(-1)).toBe("FINISHED");
  });

  it("verify: off takes the answer as it is", async () => {
    const server = await startOpenAIServer({ respond: solver(["The area is 100 m²."], []) });
    servers.push(server);
    const { result, events } = await runPlan(planTeam(server.url, "    verify: off\n"), QUESTION);
    expect(result).toMatchObject({ result_type: "answer", answer: "The area is 100 m²." });
    expect(verified(events)).toEqual([]);
  });

  it("verify: model asks the verifier model with the recorded results; its structured verdict sends a swapped answer back", async () => {
    const seen: string[] = [];
    const work = solver(["The area is 31.42 m² and the circumference 78.54 m.", "The area is 78.54 m² and the circumference 31.42 m."], seen);
    const verifierBodies: ChatBody[] = [];
    const server = await startOpenAIServer({
      respond(body) {
        if (body.model !== "checker-model") return work(body);
        verifierBodies.push(body);
        const user = JSON.parse(String(body.messages?.at(-1)?.content)) as {
          proposed_answer: string;
          recorded_tool_results: Array<{ result: { result: number } }>;
        };
        const [area] = user.recorded_tool_results.map((r) => r.result.result);
        return user.proposed_answer.includes(`area is ${area}`)
          ? { content: '{"verdict": "pass", "problems": []}' }
          : { content: '```json\n{"verdict": "fail", "problems": ["the area is 78.54 per the calculator, not 31.42 (that is the circumference)"]}\n```' };
      },
    });
    servers.push(server);
    const file = writeTeam(`version: 1
name: verify-model
models:
  default: { provider: openai, model: test-model, base_url: "${server.url}", api_key: sk-test-verify, max_retries: 0 }
  checker: { provider: openai, model: checker-model, base_url: "${server.url}", api_key: sk-test-verify, max_retries: 0 }
agents:
  solver:
    kind: plan_and_solve
    tools: [write_todos, update_todo_item, calculator, terminate]
    verify: model
    verifier: checker
`);
    const { result, events } = await runPlan(file, QUESTION);
    expect(result).toMatchObject({ result_type: "answer", answer: "The area is 78.54 m² and the circumference 31.42 m." });
    // One item computed both figures, so their provenance cannot tell them apart: the checks pass them, the model catches the swap.
    expect(verified(events).map((e) => `${e.method}:${e.verdict}`)).toEqual(["checks:pass", "model:fail", "checks:pass", "model:pass"]);
    expect(verified(events)[1]?.problems).toEqual(["the area is 78.54 per the calculator, not 31.42 (that is the circumference)"]);
    expect(seen[1]).toContain("the area is 78.54 per the calculator");
    expect(verifierBodies).toHaveLength(2);
    const shown = JSON.parse(String(verifierBodies[0]?.messages?.at(-1)?.content)) as Record<string, unknown>;
    expect(shown).toMatchObject({
      question: QUESTION,
      plan: ["1. [x] Compute the area and circumference (completed, 2 tool calls)", "2. [x] Answer with units (completed, 0 tool calls)"],
      proposed_answer: "The area is 31.42 m² and the circumference 78.54 m.",
      recorded_tool_results: [
        { tool: "calculator", arguments: { expression: "round(pi * 5^2, 2)" }, result: { result: 78.54 } },
        { tool: "calculator", arguments: { expression: "round(2 * pi * 5, 2)" }, result: { result: 31.42 } },
      ],
    });
    // The verification call is an ordinary model call of the step: in the events with its model.
    const verifierResponses = events.filter((e) => e.type === "llm.response" && e.model === "checker-model");
    expect(verifierResponses).toHaveLength(2);
    // What each verification call cost is on its verdict, and counted in the run's usage.
    const modelVerdicts = verified(events).filter((e) => e.method === "model");
    expect(modelVerdicts.every((e) => e.usage !== undefined && e.usage.total_tokens > 0)).toBe(true);
    const spent = events.flatMap((e) => (e.type === "llm.response" ? [e.usage.total_tokens] : [])).reduce((a, b) => a + b, 0);
    expect(result.usage.total_tokens).toBe(spent);
  });
});

describe("the figures of a text", () => {
  it("are read as written, beside CJK characters too, not in names, versions or counts of decimals", () => {
    expect(numbersIn("Qwen3 v2 said 1,234.5 and −3 and 78.54 m² (2 decimals), 面积为100平方米").map((n) => [n.value, n.unit?.text])).toEqual([
      [1234.5, undefined],
      [-3, undefined],
      [78.54, "m²"],
      [100, "平方米"],
    ]);
  });
});

describe("the listed parts of a request", () => {
  it("reads 'the A, B and C of/for/in' lists only, and finds the parts a text leaves out", () => {
    expect(listedParts("What are the area and circumference of a circle?")).toEqual(["area", "circumference"]);
    expect(listedParts("Give the mean, median and mode for these numbers.")).toEqual(["mean", "median", "mode"]);
    expect(listedParts("Read the file and summarize it.")).toEqual([]);
    expect(listedParts("Compute the area and then answer.")).toEqual([]);
    expect(missingParts("What are the areas and circumferences of two circles?", "Area 78.54 m², circumference 31.42 m")).toEqual([]);
    expect(missingParts("What are the area and circumference of a circle?", "The area is 78.54 m².")).toEqual(["circumference"]);
  });
});
