/**
 * Agent kind `plan_solver` (seed 000 §8–9, `create_plan_solver`): the planner
 * writes a Plan, one solver run per task with at most `concurrency` in
 * flight, then the aggregator once with every solver's output in plan order.
 * A failing solver does not stop the others; the aggregator is told which
 * failed and why. When the step's signal aborts, the runs in flight are
 * cancelled (callAgent passes the signal on), no new run starts, and the
 * step ends with the error `interrupted`.
 */
import { getMaxListeners, setMaxListeners } from "node:events";
import type { PlanSolverConfig } from "../config/types.js";
import { addUsage, type Usage, ZERO_USAGE } from "../events/types.js";
import type { AgentResult, AgentRunner } from "../runtime/types.js";
import { mapLimited } from "./concurrency.js";
import { askStructured, loadSchema, type Plan } from "./structured.js";

/** What one solver run produced. */
export type SolverOutcome = { task: string; ok: true; output: string } | { task: string; ok: false; error: string };

const INTERRUPTED = "interrupted";

/** What a solver is asked: the objective and the whole plan for context, then its one task. */
export function solverQuery(input: string, tasks: string[], index: number): string {
  const plan = tasks.map((task, i) => `${i + 1}. ${task}`).join("\n");
  return [
    `The overall objective is:\n${input}`,
    `The plan is:\n${plan}`,
    `Your task is task ${index + 1} of ${tasks.length}: ${tasks[index] ?? ""}`,
    "Solve only this task, and answer with its result.",
  ].join("\n\n");
}

/** What the aggregator is asked: the objective and every solver's result, in plan order. */
export function aggregatorQuery(input: string, outcomes: SolverOutcome[]): string {
  const failed = outcomes.filter((o) => !o.ok).length;
  const sections = outcomes.map((o, i) =>
    o.ok
      ? `### Task ${i + 1}: ${o.task}\nStatus: completed\nResult:\n${o.output}`
      : `### Task ${i + 1}: ${o.task}\nStatus: FAILED\nError: ${o.error}`,
  );
  return [
    `The overall objective is:\n${input}`,
    `The plan had ${outcomes.length} tasks, each solved separately${failed ? `; ${failed} failed` : ""}. Their results, in plan order:`,
    ...sections,
    "Combine these results into the final answer to the objective. If a task failed, say which one and why.",
  ].join("\n\n");
}

/** Without an aggregator, the answer is the solvers' outputs joined in plan order. */
export function joinedOutputs(outcomes: SolverOutcome[]): string {
  return outcomes.map((o, i) => `${i + 1}. ${o.task}\n${o.ok ? o.output : `FAILED: ${o.error}`}`).join("\n\n");
}

/** Run a `plan_solver` agent step. */
export const runPlanSolver: AgentRunner = async (ctx, input) => {
  const config = ctx.agent;
  if (config.kind !== "plan_solver") {
    return { result_type: "error", error: `agent '${config.name}' is not a plan_solver`, usage: ZERO_USAGE };
  }
  // Every solver in flight listens on the step's signal (model requests,
  // tools); Node warns past 10 listeners, which is no leak here.
  const listeners = 10 + 4 * config.concurrency;
  if (getMaxListeners(ctx.signal) < listeners) setMaxListeners(listeners, ctx.signal);

  let usage: Usage = ZERO_USAGE;
  const done = (result: Omit<AgentResult, "usage">): AgentResult => ({ ...result, usage });
  const interrupted = () => done({ result_type: "error", error: INTERRUPTED });

  const planned = await askStructured<Plan>(ctx, "planner", config.planner, input, loadSchema("plan"));
  usage = addUsage(usage, planned.usage);
  if (ctx.signal.aborted) return interrupted();
  if (!planned.ok) return done({ result_type: "error", error: planned.error });
  const tasks = planned.value.steps;
  ctx.emit({ type: "plan.created", steps: tasks });

  // `plan.updated.finished` means "the first N steps are done", so it only
  // moves when the run of finished tasks at the head of the plan grows.
  const settled = tasks.map(() => false);
  let finished = 0;
  const outcomes = await mapLimited(tasks, config.concurrency, async (task, index): Promise<SolverOutcome> => {
    if (ctx.signal.aborted) return { task, ok: false, error: INTERRUPTED };
    const result = await ctx.callAgent(config.solver, solverQuery(input, tasks, index));
    usage = addUsage(usage, result.usage);
    settled[index] = true;
    const head = settled.indexOf(false) === -1 ? tasks.length : settled.indexOf(false);
    if (head > finished) {
      finished = head;
      ctx.emit({ type: "plan.updated", steps: tasks, finished });
    }
    return result.result_type === "answer"
      ? { task, ok: true, output: result.answer ?? "" }
      : { task, ok: false, error: result.error ?? "unknown error" };
  });
  if (ctx.signal.aborted) return interrupted();

  if (!config.aggregator) return aggregateWithout(config, outcomes, done);
  const aggregated = await ctx.callAgent(config.aggregator, aggregatorQuery(input, outcomes));
  usage = addUsage(usage, aggregated.usage);
  if (ctx.signal.aborted) return interrupted();
  if (aggregated.result_type === "error") {
    return done({ result_type: "error", error: `aggregator '${config.aggregator}' failed: ${aggregated.error ?? "unknown error"}` });
  }
  return done({ result_type: "answer", answer: aggregated.answer ?? "" });
};

function aggregateWithout(
  config: PlanSolverConfig,
  outcomes: SolverOutcome[],
  done: (result: Omit<AgentResult, "usage">) => AgentResult,
): AgentResult {
  if (outcomes.every((o) => !o.ok)) {
    const first = outcomes.find((o) => !o.ok);
    return done({
      result_type: "error",
      error: `all ${outcomes.length} runs of solver '${config.solver}' failed${first && !first.ok ? `; the first: ${first.error}` : ""}`,
    });
  }
  return done({ result_type: "answer", answer: joinedOutputs(outcomes) });
}
