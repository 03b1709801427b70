import { fromPromise } from "../machine/kit.js";
import { pending } from "./machine.js";
import { TODO_TOOL_NAMES } from "./todo-tools.js";
import type { PlanAndSolveContext, PlanAndSolveEffects, Step, Verdict } from "./types.js";

/**
 * The implementations the plan_and_solve machine is given through `provide`:
 * its invoked actors over one run's effects, and the guards that read the
 * run's todo list.
 */
export function planAndSolveImplementations(effects: PlanAndSolveEffects) {
  return {
    actors: {
      /** AnalyzeProblem, CheckNextTask, CheckResults: ask the model; in AnalyzeProblem, first refuse a work tool called before any plan. */
      callModel: fromPromise<Step, { context: PlanAndSolveContext }>(async ({ input: { context } }) => {
        if (context.unplanned && context.current) {
          const outcome = effects.refuseUnplanned(context.current);
          effects.record(outcome);
          return { kind: "outcome", outcome };
        }
        return { kind: "reply", reply: await effects.callModel(context.iteration + 1) };
      }),
      /** CreatePlan, ValidatePlan: run the todo tool and answer it at once. */
      runTodoTool: fromPromise<Step, { context: PlanAndSolveContext }>(async ({ input: { context } }) => {
        const outcome = await effects.execute(context.current!);
        effects.record(outcome);
        return { kind: "outcome", outcome };
      }),
      storePlan: fromPromise<void, { context: PlanAndSolveContext }>(async () => effects.storePlan()),
      markInProgress: fromPromise<void, { context: PlanAndSolveContext }>(async () => effects.begin()),
      executeTool: fromPromise<Step, { context: PlanAndSolveContext }>(async ({ input: { context } }) => ({
        kind: "outcome",
        outcome: await effects.execute(context.current!),
      })),
      recordResult: fromPromise<void, { context: PlanAndSolveContext }>(async ({ input: { context } }) => effects.record(context.outcome!)),
      markCompleted: fromPromise<void, { context: PlanAndSolveContext }>(async ({ input: { context } }) => {
        if (context.current?.name !== "update_todo_item") effects.track(context.outcome!);
      }),
      validateAnswer: fromPromise<Verdict, { context: PlanAndSolveContext }>(({ input: { context } }) =>
        effects.verify({
          ...(context.current ? { call: context.current } : { text: context.text ?? "" }),
          may_refuse: !context.refused && context.iteration < context.max_iteration,
          can_retry: context.iteration < context.max_iteration,
        }),
      ),
      formatResponse: fromPromise<{ answer?: string }, { context: PlanAndSolveContext }>(async ({ input: { context } }) => {
        effects.finish(true);
        if (context.answer) return { answer: context.answer };
        const summary = await effects.summarize("no_answer");
        return summary.text ? { answer: summary.text } : {};
      }),
      finalSummary: fromPromise<{ text?: string }, { context: PlanAndSolveContext }>(async () => {
        effects.finish(false);
        return effects.summarize("max_iteration");
      }),
    },
    guards: {
      doneAtLimit: ({ context }: { context: PlanAndSolveContext }) => context.iteration >= context.max_iteration && effects.todos.allTerminal(),
      needsPlan: ({ context }: { context: PlanAndSolveContext }) => context.plan_invalid || effects.todos.isEmpty(),
      callsUnplanned: ({ context, event }: { context: PlanAndSolveContext; event: unknown }) => {
        const head = pending(context, event)[0];
        return head !== undefined && effects.planRequired && effects.todos.isEmpty() && head.name !== "terminate" && !TODO_TOOL_NAMES.has(head.name);
      },
      allDone: () => effects.todos.allTerminal(),
    },
  };
}
