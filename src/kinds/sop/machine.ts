/**
 * A `sop` run (docs/design/plan-tool-design.md) as a machine. The Plan Tool is passive, so the run
 * is a loop around it, with the design's operations as its states:
 *
 * - CREATE_PLAN: `create_plan_from_structure` from the team's workflow.
 * - DRIVE: one round of the driving agent (the design's `Strategist`), which
 *   works the plan through the plan tools and the assignee agents.
 * - CHECK_PLAN: `get_plan_structure`, then the plan's status decides (seed §2:
 *   `running`, `completed`, `error`): completed → DONE; error → FAILED;
 *   running → DRIVE again, reminding the strategist of the open tasks, up to
 *   MAX_STRATEGIST_ROUNDS rounds in all, then FAILED.
 *
 * The plan, not the strategist's prose, decides how the run ends: a strategist
 * that fails still ends in DONE when the plan completed; an interruption ends
 * in FAILED whatever the plan says. Either way the answer or the error
 * carries the report of every task.
 *
 * The actors' implementations come from the runner through `provide`
 * (src/kinds/sop/run.ts). Reading a plan that vanished rejects: the machine
 * then errors, and the engine reports the step's failure.
 */
import { setup } from "xstate";
import { assign, fromPromise } from "../machine/kit.js";
import { describeOpenTasks } from "../../plan/tree.js";
import type { PlanInstance } from "../../plan/types.js";
import type { AgentResult } from "../types.js";
import { failureReport, planErrorReason, report } from "./report.js";
import { outcomeOf } from "../result.js";
import { unreachable, type RunError } from "../../errors.js";

/** The strategist's first round plus the reminders it may get when it answers too early. */
export const MAX_STRATEGIST_ROUNDS = 3;

/** How one strategist round ended. */
export type Round =
  | { outcome: "answered"; answer: string }
  | { outcome: "failed"; error: RunError }
  /** The step's signal fired, before the round or during it. */
  | { outcome: "interrupted" };

export interface SopInput {
  /** The strategist agent, named in the errors. */
  strategist: string;
}

/** How the run ended; the engine adds the usage (docs/design/engine.md#steps). */
export type SopOutput = Pick<AgentResult, "result_type" | "answer" | "error">;

interface SopContext extends SopInput {
  /** Strategist rounds started. */
  round: number;
  /** The plan as CHECK_PLAN last read it. */
  plan?: PlanInstance;
  /** The last answer of the strategist: the report's summary. */
  strategistAnswer: string;
  strategistError?: RunError;
  interrupted: boolean;
  answer?: string;
  error?: RunError;
}

const notProvided = (what: string) => async () => unreachable(`sop machine: ${what} was not provided`);

type PlanRead = { plan: PlanInstance };

export const sopMachine = setup({
  types: {
    context: {} as SopContext,
    input: {} as SopInput,
    output: {} as SopOutput,
  },
  actors: {
    /** Instantiate the workflow as this run's plan; `error` says why it could not. */
    createPlan: fromPromise<{ ok: true } | { ok: false; error: RunError }>(notProvided("createPlan")),
    readPlan: fromPromise<PlanInstance>(notProvided("readPlan")),
    /** One strategist round on the plan as last read; `round` 2 and later remind it of the open tasks. */
    drive: fromPromise<Round, { plan: PlanInstance; round: number }>(notProvided("drive")),
  },
  guards: {
    refused: (_, params: { ok: boolean }) => !params.ok,
    interrupted: ({ context }) => context.interrupted,
    strategistFailed: ({ context }) => context.strategistError !== undefined,
    planCompleted: (_, { plan }: PlanRead) => plan.status === "completed",
    planInError: (_, { plan }: PlanRead) => plan.status === "error",
    roundsLeft: ({ context }) => context.round < MAX_STRATEGIST_ROUNDS,
  },
  actions: {
    /** `plan.created` with the workflow's tasks. */
    announcePlan: () => {},
    keepPlan: assign((_, { plan }: PlanRead) => ({ plan })),
    nextRound: assign(({ context }) => ({ round: context.round + 1 })),
    recordRound: assign((_, round: Round) => {
      switch (round.outcome) {
        case "answered":
          return { strategistAnswer: round.answer };
        case "failed":
          return { strategistError: round.error };
        case "interrupted":
          return { interrupted: true };
      }
    }),
    answer: assign((_, answer: string) => ({ answer })),
    fail: assign((_, error: RunError) => ({ error })),
  },
}).createMachine({
  id: "sop",
  context: ({ input }) => ({ ...input, round: 0, strategistAnswer: "", interrupted: false }),
  initial: "INIT",
  states: {
    // The initial state is entered without a microstep: leaving INIT at once reports CREATE_PLAN before its work starts.
    INIT: { always: "CREATE_PLAN" },
    CREATE_PLAN: {
      invoke: {
        src: "createPlan",
        onDone: [
          {
            guard: { type: "refused", params: ({ event }) => ({ ok: event.output.ok }) },
            target: "FAILED",
            actions: { type: "fail", params: ({ event }) => (event.output.ok ? { code: "INTERNAL", message: "" } : event.output.error) },
          },
          { target: "CHECK_PLAN", actions: "announcePlan" },
        ],
      },
    },
    CHECK_PLAN: {
      invoke: {
        src: "readPlan",
        onDone: [
          {
            guard: "interrupted",
            target: "FAILED",
            actions: { type: "fail", params: ({ event }) => ({ code: "ABORTED", message: failureReport("interrupted", event.output) }) },
          },
          {
            guard: { type: "planCompleted", params: ({ event }) => ({ plan: event.output }) },
            target: "DONE",
            actions: { type: "answer", params: ({ context, event }) => report(event.output, context.strategistAnswer) },
          },
          {
            guard: "strategistFailed",
            target: "FAILED",
            actions: {
              type: "fail",
              params: ({ context, event }) => ({
                code: context.strategistError?.code ?? "INTERNAL",
                message: failureReport(`strategist ${context.strategist} failed: ${context.strategistError?.message ?? ""}`, event.output),
              }),
            },
          },
          {
            guard: { type: "planInError", params: ({ event }) => ({ plan: event.output }) },
            target: "FAILED",
            actions: {
              type: "fail",
              // The agents marked a required task as failed: the run ends as the failure they reported.
              params: ({ context, event }) => ({
                code: "GAVE_UP",
                message: failureReport(planErrorReason(event.output), event.output, context.strategistAnswer),
              }),
            },
          },
          {
            guard: "roundsLeft",
            target: "DRIVE",
            actions: [{ type: "keepPlan", params: ({ event }) => ({ plan: event.output }) }, "nextRound"],
          },
          {
            target: "FAILED",
            actions: {
              type: "fail",
              params: ({ context, event }) => ({
                code: "MAX_ITERATION",
                message: failureReport(stillRunning(context, event.output), event.output, context.strategistAnswer),
              }),
            },
          },
        ],
      },
    },
    DRIVE: {
      invoke: {
        src: "drive",
        input: ({ context }) => ({ plan: planOf(context), round: context.round }),
        onDone: { target: "CHECK_PLAN", actions: { type: "recordRound", params: ({ event }) => event.output } },
      },
    },
    DONE: { type: "final" },
    FAILED: { type: "final" },
  },
  output: ({ context }) => outcomeOf(context),
});

function stillRunning({ strategist }: SopContext, plan: PlanInstance): string {
  return `strategist ${strategist} answered ${MAX_STRATEGIST_ROUNDS} times while plan ${plan.plan_id} was still running; open tasks: ${describeOpenTasks(plan)}`;
}

/** DRIVE is entered from CHECK_PLAN only, which keeps the plan it read. */
function planOf({ plan }: SopContext): PlanInstance {
  if (!plan) unreachable("sop machine: DRIVE entered before any CHECK_PLAN");
  return plan;
}
