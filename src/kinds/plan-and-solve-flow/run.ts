/**
 * Agent kind `plan_and_solve_flow` (docs/design/plan-and-solve-flow-design.md): a planner agent writes a Plan,
 * an executor agent runs it step by step, an optional replanner answers with
 * an Action (a new Plan or the final Response), and the flow's own model
 * summarises when `max_replan_rounds` run out. The loop lives in
 * `planAndSolveFlowMachine`; this file binds its services to one agent step.
 *
 * A failed executor step stops the flow with an error naming the step, unless
 * a replanner is enabled: then the failure is recorded in the past steps
 * (`task:…, execute task failed:…`) and the replanner decides what to do.
 */
import { fromPromise } from "../machine/kit.js";
import type { PlanAndSolveFlowConfig } from "../../config/types.js";
import { CUT_OFF_ERROR, isCutOff } from "../cut-off.js";
import { INTERRUPTED, prefixed, runErrorOf } from "../../errors.js";
import type { ChatMessage } from "../../models/types.js";
import type { AgentContext, AgentRunner } from "../types.js";
import { type Outcome, planAndSolveFlowMachine } from "./machine.js";
import { type ImplementationsOf, runMachine } from "../run-machine.js";
import { type Action, askStructured, loadSchema, type Plan } from "../structured.js";
import { loadParser, type ReplyReader } from "./parser.js";

/** The PlanAndSolve flow design's executor framing of one step. */
export function executorQuery(step: string, past_steps: string): string {
  return [
    `We have finished the following steps: ${past_steps}`,
    `The current step to execute is:${step}`,
    "You should only execute the current step, and do not execute other steps in our plan. Do not execute more than one step continuously or skip any step.",
  ].join("\n");
}

/** The PlanAndSolve flow design's replanning query (the Action format instructions are appended). */
export function replannerQuery(input: string, plan_str: string, past_steps: string): string {
  return `The target of user is:
${input}

The origin plan is:
${plan_str}

We have finished the following steps:
${past_steps}

Please update the plan considering the mentioned information. If no more operation is supposed, Use **Response** to answer the user.
Otherwise, please update the plan. The plan should only contain the steps to be executed, and do not
include the past steps or any other information.`;
}

/** The PlanAndSolve flow design's fallback: the flow's own model answers from the plan and the steps done. */
export function summaryMessages(input: string, plan_str: string, past_steps: string): ChatMessage[] {
  return [
    { role: "system", content: "Please answer user questions based on the given plan." },
    {
      role: "user",
      content: `Your objective was this: ${input}\n---\nFor the following plan:\n${plan_str}\n---\nWe have finished the following steps:${past_steps}`,
    },
  ];
}

/** Run a `plan_and_solve_flow` agent step. */
export const runPlanAndSolveFlow: AgentRunner<PlanAndSolveFlowConfig> = (ctx, input) => {
  const config = ctx.agent;
  return runMachine(ctx, planAndSolveFlowMachine, bindFlow(ctx, config, input), {
    enable_replanner: config.enable_replanner,
    max_replan_rounds: config.max_replan_rounds,
    ...(config.pre_plan_steps ? { pre_plan_steps: config.pre_plan_steps } : {}),
  });
};

/** The machine's actors and actions for this step: the planner, executor, replanner, the summary. */
function bindFlow(ctx: AgentContext<PlanAndSolveFlowConfig>, config: PlanAndSolveFlowConfig, input: string) {
  const interrupted = <T>(): Outcome<T> => ({ ok: false, error: INTERRUPTED, fatal: true });
  // The team's reader of planner and replanner replies (docs/flows.md#parser), imported when first needed;
  // a module that does not load is the flow's one-line error.
  const reader = async (which: "plan" | "action"): Promise<Outcome<ReplyReader | undefined>> => {
    if (!config.parser) return { ok: true, value: undefined };
    try {
      return { ok: true, value: (await loadParser(config.parser))[which] };
    } catch (err) {
      return { ok: false, error: runErrorOf(err), fatal: true };
    }
  };

  const services = {
    async plan(): Promise<Outcome<string[]>> {
      const read = await reader("plan");
      if (!read.ok) return read;
      const asked = await askStructured<Plan>(ctx, "planner", config.planner, input, loadSchema("plan"), read.value);
      if (ctx.signal.aborted) return interrupted();
      return asked.ok ? { ok: true, value: asked.value.steps } : { ok: false, error: asked.error };
    },

    async execute(step: string, past_steps: string): Promise<Outcome<string>> {
      const result = await ctx.callAgent(config.executor, executorQuery(step, past_steps));
      if (ctx.signal.aborted) return interrupted();
      if (result.result_type === "error") return { ok: false, error: prefixed(`executor '${config.executor}': `, result.error) };
      return { ok: true, value: result.answer ?? "" };
    },

    async replan(plan_str: string, past_steps: string): Promise<Outcome<Action["action"]>> {
      const query = replannerQuery(input, plan_str, past_steps);
      const read = await reader("action");
      if (!read.ok) return read;
      const asked = await askStructured<Action>(ctx, "replanner", config.replanner, query, loadSchema("action"), read.value);
      if (ctx.signal.aborted) return interrupted();
      return asked.ok ? { ok: true, value: asked.value.action } : { ok: false, error: asked.error };
    },

    async summarize(plan_str: string, past_steps: string): Promise<Outcome<string>> {
      if (ctx.signal.aborted) return interrupted();
      try {
        const messages = summaryMessages(input, plan_str, past_steps);
        let { reply } = await ctx.callModel({ messages });
        if (isCutOff(reply)) {
          // Sent back once, as every kind does with a reply cut off at the token limit.
          const again = [...messages, { role: "assistant" as const, content: reply.content }, { role: "user" as const, content: CUT_OFF_ERROR }];
          ({ reply } = await ctx.callModel({ messages: again }));
          if (isCutOff(reply))
            return { ok: false, error: { code: "MODEL_BAD_REPLY", message: `fallback summary failed: ${CUT_OFF_ERROR.split(";")[0]}, twice` } };
        }
        return { ok: true, value: reply.content ?? "" };
      } catch (err) {
        if (ctx.signal.aborted) return interrupted();
        return { ok: false, error: runErrorOf(err, "fallback summary failed") };
      }
    },
  };

  return {
    actors: {
      plan: fromPromise(() => services.plan()),
      execute: fromPromise(({ input }: { input: { step: string; past_steps: string } }) => services.execute(input.step, input.past_steps)),
      replan: fromPromise(({ input }: { input: { plan_str: string; past_steps: string } }) => services.replan(input.plan_str, input.past_steps)),
      summarize: fromPromise(({ input }: { input: { plan_str: string; past_steps: string } }) => services.summarize(input.plan_str, input.past_steps)),
    },
    actions: {
      planCreated: (_, { steps }) => ctx.emit({ type: "plan.created", steps }),
      planUpdated: (_, { steps, finished }) => ctx.emit({ type: "plan.updated", steps, finished }),
    },
  } satisfies ImplementationsOf<typeof planAndSolveFlowMachine>;
}
