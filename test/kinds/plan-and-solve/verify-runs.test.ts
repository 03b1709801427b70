/**
 * Issue 54's wrong and right answers, proposed by a scripted model over the
 * OpenAI-compatible test server through runTeam and `runtime exec`: every
 * wrong answer gets a finding and one question; every right one passes at
 * once; an answer that stays wrong is still the run's answer, marked
 * `verification: failed` (exit 0, or 1 under `verify: strict`).
 */
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../../src/events/types.js";
import { runCli } from "../../support/cli.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../../support/openai-server.js";
import { tempDir } from "../../support/team.js";
import { call, calls, planTeam, runPlan, todos } from "../../support/plan-and-solve.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
});

interface Task {
  question: string;
  items: string[];
  /** The calculator expression of each item. */
  exprs: string[];
}

const CIRCLE: Task = {
  question: "What are the area and circumference of a circle with radius 5 meters?",
  items: ["Compute the area", "Compute the circumference"],
  exprs: ["pi * 5^2", "2 * pi * 5"],
};
const CIRCLE_ZH: Task = { question: "半径为5米的圆的面积和周长是多少？", items: ["计算面积", "计算周长"], exprs: ["pi * 5^2", "2 * pi * 5"] };
const SHOP: Task = {
  question: "What do 3 books at $19.99 each cost with 8% tax: the subtotal, the tax and the total?",
  items: ["Compute the subtotal", "Compute the tax", "Compute the total"],
  exprs: ["3 * 19.99", "3 * 19.99 * 0.08", "3 * 19.99 * 1.08"],
};

const VERIFIER = "You verify a proposed final answer";
const isVerifier = (body: ChatBody) => String(body.messages?.[0]?.content ?? "").startsWith(VERIFIER);
const verified = (events: RunEvent[]) => events.filter((e): e is Extract<RunEvent, { type: "answer.verified" }> => e.type === "answer.verified");
const lastTool = (body: ChatBody) => String(body.messages?.filter((m) => m.role === "tool").at(-1)?.content ?? "");

/**
 * Plan the task's items, compute each with the real calculator, then answer
 * `answers[k]` on the k-th try; with `madeUp`, first answer that with no tool
 * call at all. `judge` is the verifier model's verdict on an answer.
 */
function model(task: Task, answers: string[], seen: string[], options: { madeUp?: string; judge?: (answer: string) => string[] } = {}) {
  let n = 0;
  const verifierSaw: Record<string, unknown>[] = [];
  const respond = (body: ChatBody): Reply => {
    if (isVerifier(body)) {
      const shown = JSON.parse(String(body.messages?.at(-1)?.content)) as Record<string, unknown>;
      verifierSaw.push(shown);
      const problems = options.judge?.(String(shown.proposed_answer)) ?? [];
      return { content: JSON.stringify({ verdict: problems.length > 0 ? "fail" : "pass", problems }) };
    }
    const step = n++ - (options.madeUp ? 1 : 0);
    if (step === -1) return calls(call("m", "terminate", { answer: options.madeUp! }));
    if (step === 0) return calls(call("plan", "write_todos", todos(...task.items)));
    if (step === 1) {
      return calls(
        ...task.exprs.flatMap((expression, i) => [
          call(`s${i}`, "update_todo_item", { index: i + 1, status: "in_progress" }),
          call(`c${i}`, "calculator", { expression }),
          call(`d${i}`, "update_todo_item", { index: i + 1, status: "completed" }),
        ]),
      );
    }
    seen.push(lastTool(body));
    return calls(call(`t${step}`, "terminate", { answer: answers[step - 2] ?? answers.at(-1)! }));
  };
  return { respond, verifierSaw };
}

async function serve(respond: (body: ChatBody) => Reply): Promise<OpenAIServer> {
  const server = await startOpenAIServer({ respond });
  servers.push(server);
  return server;
}

const RIGHT_CIRCLE = "The area is 78.54 m² and the circumference 31.42 m.";
const RIGHT_ZH = "面积约为78.54平方米，周长约为31.42米。";
const RIGHT_SHOP = "Subtotal $59.97, tax $4.80, total $64.77.";

describe("a wrong answer gets a finding and one question, then the corrected answer passes (verify: checks)", () => {
  it.each([
    ["the area without π", CIRCLE, "The area is 25 m² and the circumference 31.42 m.", "25 m² is not a result of any tool", RIGHT_CIRCLE],
    ["πr for the circumference", CIRCLE, "The area is 78.54 m² and the circumference 15.71 m.", "15.71 m is not a result of any tool", RIGHT_CIRCLE],
    ["2πr² for the area", CIRCLE, "The area is 157.08 m² and the circumference 31.42 m.", "157.08 m² is not a result", RIGHT_CIRCLE],
    ["the diameter for the circumference", CIRCLE, "The area is 78.54 m² and the circumference 10 m.", "10 m is not a result", RIGHT_CIRCLE],
    ["the radius as the area", CIRCLE, "The area is 5 m² and the circumference 31.42 m.", "5 m² is not a result", RIGHT_CIRCLE],
    ["cm for m", CIRCLE, "The area is 78.54 cm² and the circumference 31.42 cm.", "not in cm²; in cm² it is 785398.16", RIGHT_CIRCLE],
    [
      "the units swapped",
      CIRCLE,
      "The area is 78.54 m and the circumference 31.42 m².",
      "78.54 m is given as the area, but the area is an area and m measures a length",
      RIGHT_CIRCLE,
    ],
    ["a wrong conversion", CIRCLE, "The area is 78.54 m² (that is 7,854 cm²) and the circumference 31.42 m.", "7,854 cm² is not a result", RIGHT_CIRCLE],
    ["the figures swapped under labels", CIRCLE, "Area: 31.42 m² / Circumference: 78.54 m", "31.42 m² is given as the area", RIGHT_CIRCLE],
    ["面积 100", CIRCLE_ZH, "面积为100平方米，周长为31.42米", "100 平方米 is not a result of any tool", RIGHT_ZH],
    ["面积 and 周长 swapped", CIRCLE_ZH, "面积为31.42平方米，周长为78.54米", "is given as the area", RIGHT_ZH],
    ["subtotal and total swapped", SHOP, "Subtotal $64.77, tax $4.80, total $59.97.", "64.77 $ is given as the subtotal", RIGHT_SHOP],
    ["the tax misquoted", SHOP, "Subtotal $59.97, tax $4.90, total $64.87.", "4.90 $ is not a result", RIGHT_SHOP],
  ])("%s", async (_name, task, wrong, finding, right) => {
    const seen: string[] = [];
    const server = await serve(model(task, [wrong, right], seen).respond);
    const { result, events } = await runPlan(planTeam(server.url), task.question);
    expect(verified(events).map((e) => `${e.method}:${e.verdict}`)).toEqual(["checks:fail", "checks:pass"]);
    expect(verified(events)[0]?.problems.join("\n")).toContain(finding);
    // The finding went back to the model as a question, once.
    expect(seen[1]).toContain("Before this answer is given, please check (1 of 1)");
    expect(seen[1]).toContain(finding);
    expect(result).toMatchObject({ result_type: "answer", answer: right, verification: { status: "passed", findings: [] } });
  });

  it("figures made up with no tool call", async () => {
    const seen: string[] = [];
    const server = await serve(model(CIRCLE, [RIGHT_CIRCLE], seen, { madeUp: "The area is 78.54 m² and the circumference 31.42 m!" }).respond);
    const { result, events } = await runPlan(planTeam(server.url), CIRCLE.question);
    expect(verified(events)[0]?.problems).toEqual([
      "78.54 m² is not a result of any tool (no tool was called); compute it with a tool or correct it",
      "31.42 m is not a result of any tool (no tool was called); compute it with a tool or correct it",
    ]);
    expect(result).toMatchObject({ result_type: "answer", answer: RIGHT_CIRCLE, verification: { status: "passed" } });
  });
});

describe("a right answer passes at once, without a finding", () => {
  it.each([
    ["in feet", CIRCLE, "The circumference is about 103.1 ft; the area is 78.54 m²."],
    ["as 25π", CIRCLE, "A = 25π = 78.54 m² and C = 31.42 m"],
    ["roughly", CIRCLE, "The area is roughly 80 m² and the circumference about 31.4 m."],
    ["restating the radius, converted", CIRCLE, "With a radius of 5 m (500 cm): area 78.5 m², circumference 3,141.6 cm."],
    ["the shopping total", SHOP, "3 books at $19.99 with 8% tax = $64.77"],
    ["the shopping parts", SHOP, RIGHT_SHOP],
    ["in Chinese", CIRCLE_ZH, RIGHT_ZH],
    ["in Chinese, in cm", CIRCLE_ZH, "半径5米（500厘米）的圆：面积为785,398平方厘米，周长为3142厘米。"],
  ])("%s", async (_name, task, right) => {
    const server = await serve(model(task, [right], []).respond);
    const { result, events } = await runPlan(planTeam(server.url), task.question);
    expect(verified(events).map((e) => [e.verdict, e.problems])).toEqual([["pass", []]]);
    expect(result).toMatchObject({ result_type: "answer", answer: right, verification: { status: "passed", findings: [] } });
    expect(server.requests).toHaveLength(3);
  });
});

describe("the verifier model judges what no exact check can (verify: model)", () => {
  const parts = (words: string[]) => (answer: string) => words.filter((w) => !answer.toLowerCase().includes(w)).map((w) => `the answer does not give the ${w}`);
  it.each([
    ["a part left out", CIRCLE, "The area is 78.54 m².", ["area", "circumference"], RIGHT_CIRCLE],
    ["the 3-letter part 'tax'", SHOP, "Subtotal $59.97, total $64.77.", ["subtotal", "tax", "total"], RIGHT_SHOP],
    ["a part left out, in Chinese", CIRCLE_ZH, "面积约为78.54平方米。", ["面积", "周长"], RIGHT_ZH],
  ])("%s", async (_name, task, partial, words, right) => {
    const seen: string[] = [];
    const { respond, verifierSaw } = model(task, [partial, right], seen, { judge: parts(words) });
    const server = await serve(respond);
    const { result, events } = await runPlan(planTeam(server.url, "    verify: model\n"), task.question);
    expect(verified(events).map((e) => `${e.method}:${e.verdict}`)).toEqual(["checks:pass", "model:fail", "checks:pass", "model:pass"]);
    expect(seen[1]).toContain("the answer does not give the");
    // One short request: the question, the plan, the tool results and the findings.
    expect(verifierSaw[0]).toMatchObject({ question: task.question, proposed_answer: partial, findings: [] });
    expect(verifierSaw[0]?.plan).toHaveLength(task.items.length);
    expect(verifierSaw[0]?.recorded_tool_results).toHaveLength(task.exprs.length);
    expect(result).toMatchObject({ result_type: "answer", answer: right, verification: { status: "passed" } });
  });

  it("is shown the checks' findings; verify: checks never calls it", async () => {
    const judged = model(CIRCLE, ["The area is 25 m² and the circumference 31.42 m.", RIGHT_CIRCLE], [], { judge: () => [] });
    const server = await serve(judged.respond);
    await runPlan(planTeam(server.url, "    verify: model\n"), CIRCLE.question);
    expect(judged.verifierSaw[0]?.findings).toEqual(["25 m² is not a result of any tool; compute it or correct it"]);

    const checksOnly = model(CIRCLE, ["The area is 78.54 m²."], [], { judge: () => ["never asked"] });
    const other = await serve(checksOnly.respond);
    const { result } = await runPlan(planTeam(other.url), CIRCLE.question);
    expect(checksOnly.verifierSaw).toEqual([]);
    expect(result.verification).toEqual({ status: "passed", findings: [] });
  });
});

describe("an answer that stays wrong is still the run's answer", () => {
  const WRONG = "The area is 25 m² and the circumference 31.42 m.";
  it("runtime exec prints it, exits 0 and says it is unverified; the event and the trace keep the verification", async () => {
    const server = await serve(model(CIRCLE, [WRONG], []).respond);
    const traceDir = tempDir();
    const r = await runCli(["exec", planTeam(server.url), CIRCLE.question, "--events", "ndjson", "--trace-dir", traceDir]);
    expect(r.code).toBe(0);
    const events = r.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as RunEvent);
    const finished = events.find((e) => e.type === "run.finished");
    expect(finished).toMatchObject({
      result_type: "answer",
      answer: WRONG,
      verification: { status: "failed", findings: ["25 m² is not a result of any tool; compute it or correct it"] },
    });
    expect(r.stderr).toContain("the answer is unverified");
    const trace = await runCli(["trace", finished!.task_id, "--trace-dir", traceDir, "--json"]);
    expect(trace.stdout).toContain("25 m² is not a result of any tool");
  });

  it("under verify: strict, runtime exec still prints it and exits 1", async () => {
    const server = await serve(model(CIRCLE, [WRONG], [], { judge: () => [] }).respond);
    const r = await runCli(["exec", planTeam(server.url, "    verify: strict\n"), CIRCLE.question, "--trace-dir", tempDir()]);
    expect(r.stdout.trim()).toBe(WRONG);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("25 m² is not a result of any tool");
  });

  it("the terminal view shows it unverified, with its findings", async () => {
    const server = await serve(model(CIRCLE, [WRONG], []).respond);
    const r = await runCli(["exec", planTeam(server.url), CIRCLE.question, "--progress", "--trace-dir", tempDir()]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim()).toBe(WRONG);
    expect(r.stderr).toMatch(/■ answer .* unverified\n {2}\? 25 m² is not a result of any tool/);
  });
});
