/**
 * The Plan-Solver pipeline of docs/design/plan-solver-design.md (`create_plan_solver`) as a
 * machine. Its states take the design's nodes:
 *
 * - PLAN: the Planner (`PlanAgent.run`) writes the task list.
 * - SOLVE: FanOut → SolverAgent #1…#N → Drafts, one invoked actor running a
 *   solver per task with at most `concurrency` in flight (§9's "每个任务（可并发）").
 * - AGGREGATE: the Aggregator, run once after every solver (`aggregate(context,
 *   solver_results)`). The seed makes it optional; without one, JOIN (transient)
 *   joins the drafts in plan order, and fails only when no solver succeeded.
 * - DONE: the design's Final; FAILED: a step the pipeline cannot get past
 *   (no plan, an aggregator error, every solver failed, an interruption).
 *
 * The actors' implementations come from the runner through `provide`
 * (src/kinds/plan-solver/run.ts). They resolve with an `Outcome`, and reject
 * only on a bug: the machine then errors, and the engine reports the step's
 * failure as for any runner that throws.
 */
import { setup } from "xstate";
import { assign, fromPromise } from "../machine/kit.js";
import type { AgentResult } from "../types.js";
import { outcomeOf } from "../result.js";
import { prefixed, type RunError, unreachable } from "../../errors.js";

/** What a phase produced, or why it could not (`interrupted` when the step's signal fired). */
export type Outcome<T> = { ok: true; value: T } | { ok: false; error: RunError };

/** What one solver run produced: the design's draft. */
export type SolverOutcome = { task: string; ok: true; output: string } | { task: string; ok: false; error: RunError };

export interface PlanSolverInput {
  /** The user's request, the objective every agent of the pipeline is told. */
  objective: string;
  /** The solver agent, named in the error when every run of it failed. */
  solver: string;
  /** The aggregator agent; without one the drafts are joined (JOIN). */
  aggregator?: string;
}

/** How the pipeline ended; the engine adds the usage (docs/design/engine.md#steps). */
export type PlanSolverOutput = Pick<AgentResult, "result_type" | "answer" | "error">;

interface PlanSolverContext extends PlanSolverInput {
  tasks: string[];
  drafts: SolverOutcome[];
  answer?: string;
  error?: RunError;
}

/** Without an aggregator, the answer is the solvers' outputs joined in plan order. */
export function joinedOutputs(drafts: SolverOutcome[]): string {
  return drafts.map((d, i) => `${i + 1}. ${d.task}\n${d.ok ? d.output : `FAILED: ${d.error.message}`}`).join("\n\n");
}

/** What `fail` is given on a branch its guard rules out. */
const NO_ERROR: RunError = { code: "INTERNAL", message: "" };

const notProvided = (what: string) => async () => unreachable(`plan_solver machine: ${what} was not provided`);

export const planSolverMachine = setup({
  types: {
    context: {} as PlanSolverContext,
    input: {} as PlanSolverInput,
    output: {} as PlanSolverOutput,
  },
  actors: {
    /** The planner's Plan: the tasks, in order. */
    plan: fromPromise<Outcome<string[]>, { objective: string }>(notProvided("plan")),
    /** One solver run per task, at most `concurrency` at once; drafts in plan order. */
    solve: fromPromise<Outcome<SolverOutcome[]>, { objective: string; tasks: string[] }>(notProvided("solve")),
    /** The aggregator's answer from every draft. */
    aggregate: fromPromise<Outcome<string>, { objective: string; drafts: SolverOutcome[] }>(notProvided("aggregate")),
  },
  guards: {
    failed: (_, params: { outcome: Outcome<unknown> }) => !params.outcome.ok,
    hasAggregator: ({ context }) => context.aggregator !== undefined,
    allFailed: ({ context }) => context.drafts.every((d) => !d.ok),
  },
  actions: {
    /** `plan.created` with the tasks the solvers will get. */
    announcePlan: (_, _params: { tasks: string[] }) => {},
    adoptPlan: assign((_, tasks: string[]) => ({ tasks })),
    keepDrafts: assign((_, drafts: SolverOutcome[]) => ({ drafts })),
    answer: assign((_, answer: string) => ({ answer })),
    fail: assign((_, error: RunError) => ({ error })),
  },
}).createMachine({
  id: "plan_solver",
  context: ({ input }) => ({ ...input, tasks: [], drafts: [] }),
  initial: "INIT",
  states: {
    // The initial state is entered without a microstep: leaving INIT at once reports PLAN before its work starts.
    INIT: { always: "PLAN" },
    PLAN: {
      invoke: {
        src: "plan",
        input: ({ context }) => ({ objective: context.objective }),
        onDone: [
          {
            guard: { type: "failed", params: ({ event }) => ({ outcome: event.output }) },
            target: "FAILED",
            actions: { type: "fail", params: ({ event }) => (event.output.ok ? NO_ERROR : event.output.error) },
          },
          {
            target: "SOLVE",
            actions: [
              { type: "adoptPlan", params: ({ event }) => (event.output.ok ? event.output.value : []) },
              { type: "announcePlan", params: ({ event }) => ({ tasks: event.output.ok ? event.output.value : [] }) },
            ],
          },
        ],
      },
    },
    SOLVE: {
      invoke: {
        src: "solve",
        input: ({ context }) => ({ objective: context.objective, tasks: context.tasks }),
        onDone: [
          {
            guard: { type: "failed", params: ({ event }) => ({ outcome: event.output }) },
            target: "FAILED",
            actions: { type: "fail", params: ({ event }) => (event.output.ok ? NO_ERROR : event.output.error) },
          },
          {
            guard: "hasAggregator",
            target: "AGGREGATE",
            actions: { type: "keepDrafts", params: ({ event }) => (event.output.ok ? event.output.value : []) },
          },
          {
            target: "JOIN",
            actions: { type: "keepDrafts", params: ({ event }) => (event.output.ok ? event.output.value : []) },
          },
        ],
      },
    },
    AGGREGATE: {
      invoke: {
        src: "aggregate",
        input: ({ context }) => ({ objective: context.objective, drafts: context.drafts }),
        onDone: [
          {
            guard: { type: "failed", params: ({ event }) => ({ outcome: event.output }) },
            target: "FAILED",
            actions: { type: "fail", params: ({ event }) => (event.output.ok ? NO_ERROR : event.output.error) },
          },
          {
            target: "DONE",
            actions: { type: "answer", params: ({ event }) => (event.output.ok ? event.output.value : "") },
          },
        ],
      },
    },
    JOIN: {
      always: [
        {
          guard: "allFailed",
          target: "FAILED",
          actions: { type: "fail", params: ({ context }) => allFailedError(context) },
        },
        { target: "DONE", actions: { type: "answer", params: ({ context }) => joinedOutputs(context.drafts) } },
      ],
    },
    DONE: { type: "final" },
    FAILED: { type: "final" },
  },
  output: ({ context }) => outcomeOf(context),
});

/** Every solver failed: the first one's code, since it is the one the message names. */
function allFailedError({ drafts, solver }: PlanSolverContext): RunError {
  const first = drafts.find((d) => !d.ok);
  return prefixed(`all ${drafts.length} runs of solver '${solver}' failed; the first: `, first && !first.ok ? first.error : undefined);
}
