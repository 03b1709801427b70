import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../../src/events/types.js";
import { TraceStore } from "../../../src/store/sqlite/trace-store.js";
import { listedParts, missingParts, numberProblems, numbersIn } from "../../../src/kinds/plan-and-solve/answer-checks.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../../support/openai-server.js";
import { tempDir, writeTeam } from "../../support/team.js";
import { call, calls, finalTodos, planTeam, runPlan, todos, toolResult, walked } from "../../support/plan-and-solve.js";

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
  it("catches an area that contradicts the calculator, sends it back to SOLVING, and takes the corrected answer", async () => {
    const seen: string[] = [];
    const respond = solver(["The area is 100 m² and the circumference 31.42 m.", "The area is 78.54 m² and the circumference 31.42 m."], seen);
    const server = await startOpenAIServer({ respond });
    servers.push(server);
    const traceDir = tempDir();
    const { result, events } = await runPlan(planTeam(server.url), QUESTION, { traceDir });

    expect(result).toMatchObject({ result_type: "answer", answer: "The area is 78.54 m² and the circumference 31.42 m." });
    // The model saw the problem as its terminate call's error, naming the calculator's figure.
    expect(seen[1]).toContain("Verification failed (1 of 2 rounds)");
    expect(seen[1]).toContain('the answer says 100, but no tool result supports it: calculator({"expression":"round(pi * 5^2, 2)"}) returned 78.54');
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

  it("ends the run with the verdict when the answer stays wrong past max_verify_rounds", async () => {
    const seen: string[] = [];
    const server = await startOpenAIServer({ respond: solver(["The area is 100 m²."], seen) });
    servers.push(server);
    const { result, events } = await runPlan(planTeam(server.url, "    max_verify_rounds: 1\n"), QUESTION);
    expect(result.result_type).toBe("error");
    expect(result.error?.code).toBe("MODEL_BAD_REPLY");
    expect(result.error?.message).toMatch(/^the answer failed verification \(checks\) 2 times: the answer says 100, but no tool result supports it/);
    expect(result.error?.message).toContain("Last answer: The area is 100 m².");
    expect(verified(events).map((e) => e.verdict)).toEqual(["fail", "fail"]);
    expect(walked(events, "plan_and_solve").at(-1)).toBe("FAILED");
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
    // The swapped figures pass the number checks (both are recorded); the model catches them.
    expect(verified(events).map((e) => `${e.method}:${e.verdict}`)).toEqual(["checks:pass", "model:fail", "checks:pass", "model:pass"]);
    expect(verified(events)[1]?.problems).toEqual(["the area is 78.54 per the calculator, not 31.42 (that is the circumference)"]);
    expect(seen[1]).toContain("the area is 78.54 per the calculator");
    expect(verifierBodies).toHaveLength(2);
    const shown = JSON.parse(String(verifierBodies[0]?.messages?.at(-1)?.content)) as Record<string, unknown>;
    expect(shown).toMatchObject({
      question: QUESTION,
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

describe("the number check", () => {
  const calc = (expression: string, result: number) => ({ tool: "calculator", arguments: { expression }, result: { result } });
  it("reads numbers as written, not in names or versions", () => {
    expect(numbersIn("Qwen3 v2 said 1,234.5 and −3 and 78.54 m² (2 decimals).").map((n) => n.value)).toEqual([1234.5, -3, 78.54, 2]);
  });
  it("accepts rounded results, question numbers and far-off numbers; flags a near misquote", () => {
    const recorded = [calc("round(pi * 5^2, 2)", 78.54), calc("round(2 * pi * 5, 2)", 31.42)];
    expect(numberProblems("Area 78.5 m², about 79; circumference 31.42 m; radius 5; in 2024.", "radius 5", recorded)).toEqual([]);
    expect(numberProblems("Area 78.45 m².", "radius 5", recorded)).toEqual([
      'the answer says 78.45, but no tool result supports it: calculator({"expression":"round(pi * 5^2, 2)"}) returned 78.54',
    ]);
    expect(numberProblems("Area 100 m².", "", [])).toEqual([]);
    // A power of ten away: a misplaced decimal point, unless the answer quotes the figure as well (a unit conversion).
    expect(numberProblems("Circumference 3142 cm.", "radius 5", recorded)).toHaveLength(1);
    expect(numberProblems("Circumference 31.42 m (3142 cm).", "radius 5", recorded)).toEqual([]);
  });
});

/** The seed's plan: one item per figure, each naming the calculator; each computed in its own item, then `answers[k]` on the k-th try. */
function itemSolver(answers: string[], seen: string[]): (body: ChatBody) => Reply {
  let n = 0;
  return (body) => {
    const step = n++;
    if (step === 0) return calls(call("plan", "write_todos", todos("Compute the area with the calculator", "Compute the circumference with the calculator")));
    if (step === 1) {
      return calls(
        call("s1", "update_todo_item", { index: 1, status: "in_progress" }),
        call("area", "calculator", { expression: "round(pi * 5^2, 2)" }),
        call("d1", "update_todo_item", { index: 1, status: "completed" }),
        call("s2", "update_todo_item", { index: 2, status: "in_progress" }),
        call("circ", "calculator", { expression: "round(2 * pi * 5, 2)" }),
        call("d2", "update_todo_item", { index: 2, status: "completed" }),
      );
    }
    seen.push(lastTool(body));
    return calls(call(`t${step}`, "terminate", { answer: answers[step - 2] ?? answers.at(-1)! }));
  };
}

describe("the default checks on the seed's probes (verify: checks, no model call)", () => {
  const RIGHT = "The area is 78.54 m² and the circumference 31.42 m (the diameter is 10 m).";
  it.each([
    [
      "ten times off",
      "The area is 785.4 m² and the circumference 31.42 m.",
      /the answer says 785\.4, but no tool result supports it: calculator\(.*\) returned 78\.54 \(item "Compute the area with the calculator"\)/,
    ],
    [
      "area and circumference swapped",
      "The area is 31.42 m² and the circumference 78.54 m.",
      /the answer gives 31\.42 as the area, but calculator\(.*\) returned 78\.54 \(item "Compute the area with the calculator"\)/,
    ],
    ["a figure in words", "The area is seventy m² and the circumference 31.42 m.", /the answer says seventy, but no tool result supports it/],
    ["a part of the question left out", "The area is 78.54 m².", /the question asks for the circumference, which the answer does not give/],
  ])("refuses %s, then takes the corrected answer", async (_name, wrong, problem) => {
    const seen: string[] = [];
    const server = await startOpenAIServer({ respond: itemSolver([wrong, RIGHT], seen) });
    servers.push(server);
    const { result, events } = await runPlan(planTeam(server.url), QUESTION);
    expect(verified(events).map((e) => `${e.method}:${e.verdict}`)).toEqual(["checks:fail", "checks:pass"]);
    expect(verified(events)[0]?.problems.join("\n")).toMatch(problem);
    expect(seen[1]).toMatch(problem);
    expect(result).toMatchObject({ result_type: "answer", answer: RIGHT });
    expect(server.requests).toHaveLength(4);
  });

  it("takes a correct answer with a figure derived from the recorded ones at once", async () => {
    const server = await startOpenAIServer({ respond: itemSolver([RIGHT], []) });
    servers.push(server);
    const { result, events } = await runPlan(planTeam(server.url), QUESTION);
    expect(result).toMatchObject({ result_type: "answer", answer: RIGHT });
    expect(verified(events).map((e) => e.verdict)).toEqual(["pass"]);
  });

  it("does not complete an item that names a tool without a call of it, nor take figures no tool backs", async () => {
    const bodies: ChatBody[] = [];
    let n = 0;
    const server = await startOpenAIServer({
      respond(body) {
        bodies.push(body);
        const step = n++;
        if (step === 0) return calls(call("plan", "write_todos", todos("Compute the area with the calculator")));
        if (step === 1)
          return calls(call("s1", "update_todo_item", { index: 1, status: "in_progress" }), call("d1", "update_todo_item", { index: 1, status: "completed" }));
        return calls(call(`t${step}`, "terminate", { answer: "The area is about 80 m²." }));
      },
    });
    servers.push(server);
    const { result, events } = await runPlan(planTeam(server.url, "    max_verify_rounds: 1\n"), "What is the area of a circle with radius 5 meters?");
    expect(toolResult(bodies[2], "d1")).toBe(
      "Error: Cannot mark item 1 completed: it names calculator, which has not been called for it. Call calculator while item 1 is in progress, or mark the item skipped.",
    );
    expect(finalTodos(events)[0]?.status).not.toBe("completed");
    expect(events.some((e) => e.type === "tool.started" && e.tool === "calculator")).toBe(false);
    // The first terminate is the early-terminate reminder; the next two fail verification; the run ends with the verdict.
    expect(verified(events).map((e) => e.verdict)).toEqual(["fail", "fail"]);
    expect(verified(events)[0]?.problems).toEqual([
      'item 1 ("Compute the area with the calculator") names calculator, which was never called: the answer\'s figures (80) rest on no tool result',
    ]);
    expect(result.result_type).toBe("error");
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
