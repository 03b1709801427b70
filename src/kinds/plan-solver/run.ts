/**
 * Agent kind `plan_solver` (docs/design/plan-solver-design.md, `create_plan_solver`): the planner
 * writes a Plan, one solver run per task with at most `concurrency` in
 * flight, then the aggregator once with every solver's output in plan order.
 * A failing solver does not stop the others; the aggregator is told which
 * failed and why. When the step's signal aborts, the runs in flight are
 * cancelled (callAgent passes the signal on), no new run starts, and the
 * step ends with the error `interrupted`. The pipeline lives in
 * `planSolverMachine`; this file binds its actors to one agent step.
 */
import { getMaxListeners, setMaxListeners } from "node:events";
import { fromPromise } from "../machine/kit.js";
import type { PlanSolverConfig } from "../../config/types.js";
import type { AgentContext, AgentRunner } from "../types.js";
import { mapLimited } from "./concurrency.js";
import { type Outcome, planSolverMachine, type SolverOutcome } from "./machine.js";
import { askStructured, loadSchema, type Plan } from "../structured.js";
import { type ImplementationsOf, runMachine } from "../run-machine.js";
import { INTERRUPTED, prefixed } from "../../errors.js";

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
    o.ok ? `### Task ${i + 1}: ${o.task}\nStatus: completed\nResult:\n${o.output}` : `### Task ${i + 1}: ${o.task}\nStatus: FAILED\nError: ${o.error.message}`,
  );
  return [
    `The overall objective is:\n${input}`,
    `The plan had ${outcomes.length} tasks, each solved separately${failed ? `; ${failed} failed` : ""}. Their results, in plan order:`,
    ...sections,
    "Combine these results into the final answer to the objective. If a task failed, say which one and why.",
  ].join("\n\n");
}

/** Run a `plan_solver` agent step. */
export const runPlanSolver: AgentRunner<PlanSolverConfig> = async (ctx, input) => {
  const config = ctx.agent;
  // Every solver in flight listens on the step's signal (model requests,
  // tools); Node warns past 10 listeners, which is no leak here.
  const listeners = 10 + 4 * config.concurrency;
  if (getMaxListeners(ctx.signal) < listeners) setMaxListeners(listeners, ctx.signal);

  return runMachine(ctx, planSolverMachine, bindPipeline(ctx), {
    objective: input,
    solver: config.solver,
    ...(config.aggregator ? { aggregator: config.aggregator } : {}),
  });
};

/** The machine's actors for this step: the planner, the solvers, the aggregator. */
function bindPipeline(ctx: AgentContext<PlanSolverConfig>) {
  const config = ctx.agent;
  const interrupted = <T>(): Outcome<T> => ({ ok: false, error: INTERRUPTED });

  const plan = async ({ objective }: { objective: string }): Promise<Outcome<string[]>> => {
    const planned = await askStructured<Plan>(ctx, "planner", config.planner, objective, loadSchema("plan"));
    if (ctx.signal.aborted) return interrupted();
    return planned.ok ? { ok: true, value: planned.value.steps } : { ok: false, error: planned.error };
  };

  const solve = async ({ objective, tasks }: { objective: string; tasks: string[] }): Promise<Outcome<SolverOutcome[]>> => {
    // Each solver that ends adds its task to `plan.updated.done` (1-based, in plan order), as react reports the steps it marked;
    // `finished` counts them. Tasks run in parallel, so any task may end first.
    const done: number[] = [];
    const drafts = await mapLimited(tasks, config.concurrency, async (task, index): Promise<SolverOutcome> => {
      if (ctx.signal.aborted) return { task, ok: false, error: INTERRUPTED };
      const result = await ctx.callAgent(config.solver, solverQuery(objective, tasks, index));
      done.push(index + 1);
      done.sort((a, b) => a - b);
      ctx.emit({ type: "plan.updated", steps: tasks, finished: done.length, done: [...done] });
      return result.result_type === "answer" ? { task, ok: true, output: result.answer ?? "" } : { task, ok: false, error: prefixed("", result.error) };
    });
    if (ctx.signal.aborted) return interrupted();
    return { ok: true, value: drafts };
  };

  const aggregate = async ({ objective, drafts }: { objective: string; drafts: SolverOutcome[] }): Promise<Outcome<string>> => {
    const aggregator = config.aggregator ?? "";
    const aggregated = await ctx.callAgent(aggregator, aggregatorQuery(objective, drafts));
    if (ctx.signal.aborted) return interrupted();
    if (aggregated.result_type === "error") {
      return { ok: false, error: prefixed(`aggregator '${aggregator}' failed: `, aggregated.error) };
    }
    return { ok: true, value: aggregated.answer ?? "" };
  };

  return {
    actors: {
      plan: fromPromise(({ input }: { input: { objective: string } }) => plan(input)),
      solve: fromPromise(({ input }: { input: { objective: string; tasks: string[] } }) => solve(input)),
      aggregate: fromPromise(({ input }: { input: { objective: string; drafts: SolverOutcome[] } }) => aggregate(input)),
    },
    actions: {
      announcePlan: (_, { tasks }) => ctx.emit({ type: "plan.created", steps: tasks }),
    },
  } satisfies ImplementationsOf<typeof planSolverMachine>;
}
