/**
 * VERIFYING.ValidateAnswer (docs/design/plan-and-solve-design.md diagram 1: CheckResults "Review
 * Outputs", ValidateAnswer "Verify Calculations"; docs/design/verification.md):
 * a proposed final answer is checked against what the run recorded. `checks`:
 * the provenance of its figures (answer-checks.ts). `model` and `strict`:
 * those findings, then one model call (the agent's model or its `verifier`)
 * that sees the question, the plan, the tool results and the findings, and
 * answers a structured verdict on what no exact check judges (coverage of
 * the question's parts in any language, consistency). Each verification is
 * an `answer.verified` event, so the trace shows it.
 */
import type { PlanAndSolveAgentConfig } from "../../config/types.js";
import { parseJsonTolerant } from "../../parse/json.js";
import type { AgentContext } from "../types.js";
import type { Usage } from "../../events/types.js";
import { figureFindings, type RecordedResult } from "./answer-checks.js";

/** What a verification decided. */
export interface AnswerVerdict {
  verdict: "pass" | "fail" | "unclear";
  problems: string[];
}

/** The verdict the verification model is asked for. */
export const VERDICT_SCHEMA = Object.freeze({
  type: "object",
  properties: {
    verdict: { type: "string", enum: ["pass", "fail"] },
    problems: { type: "array", items: { type: "string" } },
  },
  required: ["verdict", "problems"],
  additionalProperties: false,
});

/** Most recorded results (the latest) and characters of each shown to the verifier. */
const MAX_RESULTS = 30;
const MAX_RESULT_CHARS = 2000;

const INSTRUCTIONS =
  "You verify a proposed final answer before it is given to the user. You see the user's question, the plan, the " +
  "results the tools actually returned, the proposed answer and the findings of the exact checks (figures no tool " +
  "result traces). Check that the answer answers every part of the question (in whatever language it is asked), " +
  "that its claims agree with the tool results and with each other, and whether each finding is a real error. Do " +
  'not redo the work and do not judge style. Reply with JSON only: {"verdict": "pass" | "fail", "problems": ["..."]}, ' +
  "where each problem says what is wrong and what the tool results say; problems is empty when the verdict is pass.";

export interface VerifyRequest {
  question: string;
  answer: string;
  recorded: readonly RecordedResult[];
  /** The plan's items, as the verifier is shown them. */
  plan: readonly string[];
  /** The recursion the verification belongs to. */
  trace_id: string;
  round: number;
}

/** Check one proposed answer as the agent's `verify` says; emits `answer.verified` for each method run. */
export async function verifyAnswer(ctx: AgentContext<PlanAndSolveAgentConfig>, request: VerifyRequest): Promise<AnswerVerdict> {
  const mode = ctx.agent.verify;
  if (mode === "off") return { verdict: "pass", problems: [] };
  const report = (method: "checks" | "model", verdict: AnswerVerdict, usage?: Usage) => {
    ctx.emit(
      { type: "answer.verified", method, ...verdict, answer: request.answer, round: request.round, ...(usage ? { usage } : {}) },
      { trace_id: request.trace_id },
    );
    return verdict;
  };
  const findings = figureFindings(request.answer, request.question, request.recorded);
  const checked = report("checks", { verdict: findings.length > 0 ? "fail" : "pass", problems: findings });
  if (mode === "checks") return checked;
  const { verdict, usage } = await askVerifier(ctx, request, findings);
  report("model", verdict, usage);
  // The model judges what the checks cannot; a finding it does not confirm still stands (it is a question, not a refusal).
  const problems = [...new Set([...findings, ...(verdict.verdict === "fail" ? verdict.problems : [])])];
  return { verdict: problems.length > 0 ? "fail" : "pass", problems };
}

async function askVerifier(
  ctx: AgentContext<PlanAndSolveAgentConfig>,
  request: VerifyRequest,
  findings: readonly string[],
): Promise<{ verdict: AnswerVerdict; usage: Usage }> {
  const results = request.recorded.slice(-MAX_RESULTS).map((r) => ({
    tool: r.tool,
    arguments: r.arguments,
    result: clipped(r.result),
  }));
  const { reply } = await ctx.callModel({
    model: ctx.agent.verifier,
    trace_id: request.trace_id,
    response_format: { name: "verdict", schema: VERDICT_SCHEMA },
    messages: [
      { role: "system", content: INSTRUCTIONS },
      {
        role: "user",
        content: JSON.stringify(
          { question: request.question, plan: request.plan, recorded_tool_results: results, proposed_answer: request.answer, findings },
          null,
          1,
        ),
      },
    ],
    read: (r) => ({ action_type: "VERIFY", ...(r.content ? { thought: r.content } : {}) }),
  });
  // Fenced, trailing commas, prose around it: a real model's JSON, read tolerantly.
  const read = parseJsonTolerant(reply.content ?? "", { accept: (v) => typeof v === "object" && v !== null && !Array.isArray(v) });
  const parsed = read.ok ? (read.value as Record<string, unknown>) : undefined;
  const verdict = parsed?.verdict;
  const problems = Array.isArray(parsed?.problems) ? parsed.problems.filter((p): p is string => typeof p === "string" && p.trim() !== "") : [];
  const usage = reply.usage;
  if (verdict === "fail")
    return { usage, verdict: { verdict: "fail", problems: problems.length > 0 ? problems : ["the verifier found the answer wrong without saying why"] } };
  if (verdict === "pass") return { usage, verdict: { verdict: "pass", problems: [] } };
  return { usage, verdict: { verdict: "unclear", problems: [`the verifier's reply is not a verdict: ${(reply.content ?? "").slice(0, 200)}`] } };
}

const COVERAGE_INSTRUCTIONS =
  "You review a plan (a todo list) before the work starts. You see the user's request and the plan's items. Check " +
  "that doing every item answers the whole request: name each part of the request that no item covers, and each item " +
  'that does not serve the request. Do not judge wording or style. Reply with JSON only: {"verdict": "pass" | ' +
  '"fail", "problems": ["..."]}; problems is empty when the verdict is pass.';

/**
 * validate_plan's review of coverage, with `verify: model`
 * (docs/plan-and-solve.md#planning-comes-first-and-is-reviewed): one model
 * call (the agent's model or its `verifier`) judges whether the plan covers
 * the request. Its problems, each prefixed "Coverage:", join the wording and
 * feasibility ones; a reply that is no verdict is no problem (the answer is
 * verified anyway).
 */
export async function reviewCoverage(
  ctx: AgentContext<PlanAndSolveAgentConfig>,
  question: string,
  items: readonly { index: number; content: string }[],
): Promise<string[]> {
  if (items.length === 0) return [];
  const { reply } = await ctx.callModel({
    model: ctx.agent.verifier,
    response_format: { name: "verdict", schema: VERDICT_SCHEMA },
    messages: [
      { role: "system", content: COVERAGE_INSTRUCTIONS },
      { role: "user", content: `Request:\n${question}\n\nPlan:\n${items.map((i) => `${i.index}. ${i.content}`).join("\n")}` },
    ],
    read: (r) => ({ action_type: "REVIEW_PLAN", ...(r.content ? { thought: r.content } : {}) }),
  });
  const read = parseJsonTolerant(reply.content ?? "", { accept: (v) => typeof v === "object" && v !== null && !Array.isArray(v) });
  const parsed = read.ok ? (read.value as Record<string, unknown>) : undefined;
  if (parsed?.verdict !== "fail") return [];
  const problems = Array.isArray(parsed.problems) ? parsed.problems.filter((p): p is string => typeof p === "string" && p.trim() !== "") : [];
  return (problems.length > 0 ? problems : ["the plan does not cover the request"]).map((p) => `Coverage: ${p}`);
}

function clipped(value: unknown): unknown {
  const text = JSON.stringify(value) ?? "";
  return text.length <= MAX_RESULT_CHARS ? value : `${text.slice(0, MAX_RESULT_CHARS)}… (cut)`;
}
