/**
 * The PlanAndSolve flow of docs/design/plan-and-solve-flow-design.md (`PlanAndSolve._execute`) as a machine:
 * INIT → PLAN (unless pre_plan_steps) → EXECUTE one step → REPLAN (with a
 * replanner) or the next step → … → SUMMARY when the rounds run out → DONE.
 * The machine holds the loop; the model and agent calls are invoked actors
 * whose implementations the runner binds to its step with `provide`
 * (src/kinds/plan-and-solve-flow/run.ts).
 */
import { setup } from "xstate";
import { assign, fromPromise } from "../machine/kit.js";
import type { AgentResult } from "../types.js";
import type { Action } from "../structured.js";
import { outcomeOf } from "../result.js";
import { codeOf, prefixed, type RunError, unreachable } from "../../errors.js";

/** What `fail` is given on a branch its guard rules out. */
const NO_ERROR: RunError = { code: "INTERNAL", message: "" };

/** What a service produced, or why it could not; `fatal` failures (interruption) are never passed on. */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: RunError; fatal?: boolean };

export interface FlowInput {
  enable_replanner: boolean;
  max_replan_rounds: number;
  pre_plan_steps?: string[];
}

interface FlowContext extends FlowInput {
  /** The plan still to execute; `steps[0]` is the current step. */
  steps: string[];
  /** The numbered plan shown to the replanner and the summary (the design's `plan_str`). */
  plan_str: string;
  /** The design's `past_steps` text: one `task:…, execute task result:…` line per step. */
  past_steps: string;
  /** Steps executed so far, in order. */
  finished: string[];
  round: number;
  answer?: string;
  error?: RunError;
}

export type FlowOutput = Pick<AgentResult, "result_type" | "answer" | "error">;

type Executed = Outcome<string>;

const notProvided = (what: string) => async () => unreachable(`plan_and_solve_flow machine: ${what} was not provided`);

const numbered = (steps: string[]) => steps.map((step, i) => `${i + 1}. ${step}`).join("\n");

export const planAndSolveFlowMachine = setup({
  types: {
    context: {} as FlowContext,
    input: {} as FlowInput,
    output: {} as FlowOutput,
  },
  actors: {
    /** Ask the planner for a Plan (with one repair round-trip). */
    plan: fromPromise<Outcome<string[]>>(notProvided("plan")),
    /** Run the executor on one step with the design's framing. */
    execute: fromPromise<Executed, { step: string; past_steps: string }>(notProvided("execute")),
    /** Ask the replanner for an Action. */
    replan: fromPromise<Outcome<Action["action"]>, { plan_str: string; past_steps: string }>(notProvided("replan")),
    /** The fallback summary by the flow's own model when the rounds run out. */
    summarize: fromPromise<Outcome<string>, { plan_str: string; past_steps: string }>(notProvided("summarize")),
  },
  guards: {
    hasPrePlan: ({ context }) => (context.pre_plan_steps?.length ?? 0) > 0,
    roundsLeft: ({ context }) => context.round < context.max_replan_rounds,
    replanning: ({ context }) => context.enable_replanner,
    lastStep: ({ context }) => context.steps.length <= 1,
    succeeded: (_, params: { outcome: Outcome<unknown> }) => params.outcome.ok,
    failed: (_, params: { outcome: Outcome<unknown> }) => !params.outcome.ok,
    /** Without a replanner nobody could act on a failed step; an interruption stops the flow either way. */
    stepFailedForGood: ({ context }, params: { outcome: Outcome<unknown> }) =>
      !params.outcome.ok && (params.outcome.fatal === true || !context.enable_replanner),
    answered: (_, params: { outcome: Outcome<Action["action"]> }) => params.outcome.ok && "response" in params.outcome.value,
  },
  actions: {
    adoptPlan: assign((_, steps: string[]) => ({ steps, plan_str: numbered(steps) })),
    /** `plan.created` with the plan's steps. */
    planCreated: (_, _params: { steps: string[] }) => {},
    /** `plan.updated`: the steps done and those still to do, `finished` of them done. */
    planUpdated: (_, _params: { steps: string[]; finished: number }) => {},
    /** Seed: `past_steps += "\n" + f"task:{task}, execute task result:{output}"`; a failure is recorded as such. */
    record: assign(({ context }, outcome: Executed) => {
      const step = context.steps[0] ?? "";
      const line = outcome.ok ? `task:${step}, execute task result:${outcome.value}` : `task:${step}, execute task failed:${outcome.error.message}`;
      return { past_steps: `${context.past_steps}\n${line}`, finished: [...context.finished, step] };
    }),
    advance: assign(({ context }) => ({ steps: context.steps.slice(1) })),
    nextRound: assign(({ context }) => ({ round: context.round + 1 })),
    answer: assign((_, answer: string) => ({ answer })),
    fail: assign((_, error: RunError) => ({ error })),
  },
}).createMachine({
  id: "plan_and_solve_flow",
  context: ({ input }) => ({ ...input, steps: [], plan_str: "", past_steps: "", finished: [], round: 0 }),
  initial: "INIT",
  states: {
    INIT: {
      always: [
        {
          guard: "hasPrePlan",
          target: "EXECUTE",
          actions: [
            { type: "adoptPlan", params: ({ context }) => context.pre_plan_steps ?? [] },
            { type: "planCreated", params: ({ context }) => ({ steps: context.steps }) },
          ],
        },
        { target: "PLAN" },
      ],
    },
    PLAN: {
      invoke: {
        src: "plan",
        onDone: [
          {
            guard: { type: "succeeded", params: ({ event }) => ({ outcome: event.output }) },
            target: "EXECUTE",
            actions: [
              { type: "adoptPlan", params: ({ event }) => (event.output.ok ? event.output.value : []) },
              { type: "planCreated", params: ({ context }) => ({ steps: context.steps }) },
            ],
          },
          { target: "FAILED", actions: { type: "fail", params: ({ event }) => (event.output.ok ? NO_ERROR : event.output.error) } },
        ],
        onError: { target: "FAILED", actions: { type: "fail", params: ({ event }) => thrown("planning failed: ", event.error) } },
      },
    },
    EXECUTE: {
      invoke: {
        src: "execute",
        input: ({ context }) => ({ step: context.steps[0] ?? "", past_steps: context.past_steps }),
        onDone: [
          {
            guard: { type: "stepFailedForGood", params: ({ event }) => ({ outcome: event.output }) },
            target: "FAILED",
            actions: { type: "fail", params: ({ context, event }) => stepFailure(context, event.output) },
          },
          {
            guard: "replanning",
            target: "REPLAN",
            actions: [{ type: "record", params: ({ event }) => event.output }, "advance", { type: "planUpdated", params: ({ context }) => progress(context) }],
          },
          {
            guard: "lastStep",
            target: "DONE",
            actions: [
              { type: "record", params: ({ event }) => event.output },
              "advance",
              { type: "planUpdated", params: ({ context }) => progress(context) },
              { type: "answer", params: ({ event }) => (event.output.ok ? event.output.value : "") },
            ],
          },
          {
            guard: "roundsLeft",
            target: "EXECUTE",
            reenter: true,
            actions: [
              { type: "record", params: ({ event }) => event.output },
              "advance",
              { type: "planUpdated", params: ({ context }) => progress(context) },
              "nextRound",
            ],
          },
          {
            target: "SUMMARY",
            actions: [{ type: "record", params: ({ event }) => event.output }, "advance", { type: "planUpdated", params: ({ context }) => progress(context) }],
          },
        ],
        onError: { target: "FAILED", actions: { type: "fail", params: ({ event }) => thrown("execution failed: ", event.error) } },
      },
    },
    REPLAN: {
      invoke: {
        src: "replan",
        input: ({ context }) => ({ plan_str: context.plan_str, past_steps: context.past_steps }),
        onDone: [
          {
            guard: { type: "failed", params: ({ event }) => ({ outcome: event.output }) },
            target: "FAILED",
            actions: { type: "fail", params: ({ event }) => (event.output.ok ? NO_ERROR : event.output.error) },
          },
          {
            guard: { type: "answered", params: ({ event }) => ({ outcome: event.output }) },
            target: "DONE",
            actions: {
              type: "answer",
              params: ({ event }) => (event.output.ok && "response" in event.output.value ? event.output.value.response : ""),
            },
          },
          {
            guard: "roundsLeft",
            target: "EXECUTE",
            actions: [
              { type: "adoptPlan", params: ({ event }) => newSteps(event.output) },
              { type: "planUpdated", params: ({ context }) => progress(context) },
              "nextRound",
            ],
          },
          {
            target: "SUMMARY",
            actions: [
              { type: "adoptPlan", params: ({ event }) => newSteps(event.output) },
              { type: "planUpdated", params: ({ context }) => progress(context) },
            ],
          },
        ],
        onError: { target: "FAILED", actions: { type: "fail", params: ({ event }) => thrown("replanning failed: ", event.error) } },
      },
    },
    SUMMARY: {
      invoke: {
        src: "summarize",
        input: ({ context }) => ({ plan_str: context.plan_str, past_steps: context.past_steps }),
        onDone: [
          {
            guard: { type: "succeeded", params: ({ event }) => ({ outcome: event.output }) },
            target: "DONE",
            actions: { type: "answer", params: ({ event }) => (event.output.ok ? event.output.value : "") },
          },
          { target: "FAILED", actions: { type: "fail", params: ({ event }) => (event.output.ok ? NO_ERROR : event.output.error) } },
        ],
        onError: { target: "FAILED", actions: { type: "fail", params: ({ event }) => thrown("summary failed: ", event.error) } },
      },
    },
    DONE: { type: "final" },
    FAILED: { type: "final" },
  },
  output: ({ context }) => outcomeOf(context),
});

function stepFailure(context: FlowContext, outcome: Executed): RunError {
  if (outcome.ok) return NO_ERROR;
  if (outcome.fatal) return outcome.error;
  return prefixed(`step ${context.finished.length + 1} ("${context.steps[0] ?? ""}") failed: `, outcome.error);
}

/** A service that threw (a bug, or a RuntimeError it let through): its code kept. */
function thrown(context: string, err: unknown): RunError {
  return { code: codeOf(err), message: `${context}${String(err)}` };
}

function newSteps(outcome: Outcome<Action["action"]>): string[] {
  return outcome.ok && "steps" in outcome.value ? outcome.value.steps : [];
}

function progress(context: FlowContext): { steps: string[]; finished: number } {
  return { steps: [...context.finished, ...context.steps], finished: context.finished.length };
}
