import { setup } from "xstate";
import { assign, fromPromise } from "../machine/kit.js";
import type { ChatResponse, ToolCallRequest } from "../../models/types.js";
import type { Verification } from "../../events/types.js";
import { WRITE_TOOLS } from "./todo-tools.js";
import type { Outcome } from "../types.js";
import { codeOf, type RunError, unreachable } from "../../errors.js";
import type { PlanAndSolveContext, PlanAndSolveInput, Step, Verdict } from "./types.js";

export type * from "./types.js";

const ID = "plan_and_solve";
const notProvided = (what: string) => async () => unreachable(`plan_and_solve machine: ${what} was not provided`);
const at = (path: string) => `#${ID}.${path}`;

/** The calls still to handle: a fresh reply's, else the queue. */
export function pending(context: PlanAndSolveContext, event: unknown): ToolCallRequest[] {
  const step = (event as { output?: Step }).output;
  return step?.kind === "reply" ? step.reply.tool_calls : context.queue;
}

function headIn(context: PlanAndSolveContext, event: unknown, names: readonly string[]): boolean {
  const head = pending(context, event)[0];
  return head !== undefined && names.includes(head.name);
}

function freshReply(event: unknown): ChatResponse | undefined {
  const step = (event as { output?: Step }).output;
  return step?.kind === "reply" ? step.reply : undefined;
}

/**
 * Where to go next, from a model reply or after a tool: the next call
 * decides (write_todos plans, validate_plan validates, terminate verifies,
 * any other tool is work); a reply without calls is the answer; with every
 * call handled, the model is asked again in the phase the todo list is in,
 * unless no model call is left: then a finished list goes to FormatResponse
 * (the summary answers) and an unfinished one to FinalSummary (an error).
 * `before` runs on whichever transition is taken. Every target is entered
 * anew, even the state the machine is in (a second terminate after a refused
 * one validates again): its work starts again.
 */
function next(before: readonly ("countRound" | "noteVerdict")[] = []) {
  const unplanned = ["take", "markUnplanned"] as const;
  return [
    { guard: "callsWriteTodos" as const, target: at("PLANNING.CreatePlan"), reenter: true, actions: [...before, "take" as const] },
    { guard: "callsValidatePlan" as const, target: at("PLANNING.ValidatePlan"), reenter: true, actions: [...before, "take" as const] },
    { guard: "callsTerminate" as const, target: at("VERIFYING.ValidateAnswer"), reenter: true, actions: [...before, "take" as const] },
    { guard: "callsUpdateTodo" as const, target: at("SOLVING.ExecuteTool"), reenter: true, actions: [...before, "take" as const] },
    // A work tool before any plan is refused where the plan is asked for, never in SOLVING (docs/plan-and-solve.md#planning-comes-first-and-is-reviewed).
    { guard: "callsUnplanned" as const, target: at("PLANNING.AnalyzeProblem"), reenter: true, actions: [...before, ...unplanned] },
    { guard: "callsWorkTool" as const, target: at("SOLVING.MarkInProgress"), reenter: true, actions: [...before, "take" as const] },
    { guard: "textReply" as const, target: at("VERIFYING.ValidateAnswer"), reenter: true, actions: [...before, "takeText" as const] },
    // Out of model calls with every item done: the work is finished, only the answer is missing.
    { guard: "doneAtLimit" as const, target: at("VERIFYING.FormatResponse"), actions: [...before] },
    { guard: "maxReached" as const, target: at("FinalSummary"), actions: [...before] },
    { guard: "needsPlan" as const, target: at("PLANNING.AnalyzeProblem"), reenter: true, actions: [...before] },
    { guard: "allDone" as const, target: at("VERIFYING.CheckResults"), reenter: true, actions: [...before] },
    { target: at("SOLVING.CheckNextTask"), reenter: true, actions: [...before] },
  ];
}

/** A state that asks the model: AnalyzeProblem, CheckNextTask, CheckResults. */
const modelRound = {
  src: "callModel" as const,
  input: ({ context }: { context: PlanAndSolveContext }) => ({ context }),
  onDone: next(["countRound"]),
  onError: { target: at("FAILED"), actions: "fail" as const },
};

/**
 * The Plan-and-Solve lifecycle of docs/design/plan-and-solve-design.md diagram 1, state for state:
 * IDLE → PLANNING{AnalyzeProblem, CreatePlan, ValidatePlan, StorePlan} →
 * SOLVING{CheckNextTask, MarkInProgress, ExecuteTool, RecordResult,
 * MarkCompleted} → VERIFYING{CheckResults, ValidateAnswer, FormatResponse} →
 * FINISHED, plus FinalSummary (docs/design/plan-and-solve-design.md diagram 6) and FAILED for a run that
 * ends in error. The model's tool calls drive every transition.
 */
export const planAndSolveMachine = setup({
  types: {
    context: {} as PlanAndSolveContext,
    input: {} as PlanAndSolveInput,
    output: {} as Outcome,
    events: {} as { type: "RUN" },
  },
  // Implementations come from the runner through `provide` (bindPlanAndSolve, src/kinds/plan-and-solve/run.ts).
  actors: {
    callModel: fromPromise<Step, { context: PlanAndSolveContext }>(notProvided("callModel")),
    runTodoTool: fromPromise<Step, { context: PlanAndSolveContext }>(notProvided("runTodoTool")),
    storePlan: fromPromise<void, { context: PlanAndSolveContext }>(notProvided("storePlan")),
    markInProgress: fromPromise<void, { context: PlanAndSolveContext }>(notProvided("markInProgress")),
    executeTool: fromPromise<Step, { context: PlanAndSolveContext }>(notProvided("executeTool")),
    recordResult: fromPromise<void, { context: PlanAndSolveContext }>(notProvided("recordResult")),
    markCompleted: fromPromise<void, { context: PlanAndSolveContext }>(notProvided("markCompleted")),
    validateAnswer: fromPromise<Verdict, { context: PlanAndSolveContext }>(notProvided("validateAnswer")),
    formatResponse: fromPromise<{ answer?: string; verification?: Verification }, { context: PlanAndSolveContext }>(notProvided("formatResponse")),
    finalSummary: fromPromise<{ text?: string }, { context: PlanAndSolveContext }>(notProvided("finalSummary")),
  },
  guards: {
    callsWriteTodos: ({ context, event }) => headIn(context, event, WRITE_TOOLS),
    callsValidatePlan: ({ context, event }) => headIn(context, event, ["validate_plan"]),
    callsTerminate: ({ context, event }) => headIn(context, event, ["terminate"]),
    callsUpdateTodo: ({ context, event }) => headIn(context, event, ["update_todo_item"]),
    callsWorkTool: ({ context, event }) => pending(context, event).length > 0,
    textReply: ({ event }) => {
      const reply = freshReply(event);
      return reply !== undefined && reply.tool_calls.length === 0;
    },
    maxReached: ({ context }) => context.iteration >= context.max_iteration,
    // The todo list's state is the runner's: these read it through `provide` as well.
    doneAtLimit: () => false,
    needsPlan: () => false,
    callsUnplanned: () => false,
    allDone: () => false,
    outcomeFailed: ({ event }) => {
      const step = (event as { output?: Step }).output;
      return step?.kind === "outcome" && !step.outcome.ok;
    },
    planRejected: ({ event }) => {
      const step = (event as { output?: Step }).output;
      return step?.kind === "outcome" && step.outcome.ok && (step.outcome.result as { valid?: boolean })?.valid === false;
    },
    nextIsValidate: ({ context }) => context.queue[0]?.name === "validate_plan",
    accepted: ({ event }) => (event as { output?: Verdict }).output?.kind === "accepted",
    answerRejected: ({ event }) => (event as { output?: Verdict }).output?.kind === "rejected",
  },
  actions: {
    fail: assign(({ event }) => {
      const err = (event as { error?: unknown }).error;
      return { error: { code: codeOf(err), message: errorText(err) } };
    }),
    take: assign(({ context, event }) => {
      const [current, ...queue] = pending(context, event);
      return { current, queue, outcome: undefined, text: undefined };
    }),
    takeText: assign(({ event }) => ({ current: undefined, queue: [], text: freshReply(event)?.content ?? "" })),
    // A refusal answered in AnalyzeProblem is no model call.
    countRound: assign(({ context, event }) => ({ iteration: context.iteration + (freshReply(event) ? 1 : 0), unplanned: false })),
    markUnplanned: assign({ unplanned: true }),
    noteVerdict: assign(({ context, event }) => ({
      refused: context.refused || (event as { output?: Verdict }).output?.kind === "refused",
    })),
  },
}).createMachine({
  id: ID,
  context: ({ input }) => ({ ...input, iteration: 0, queue: [], refused: false, plan_invalid: false, unplanned: false }),
  initial: "IDLE",
  states: {
    IDLE: { on: { RUN: [{ guard: "maxReached", target: "FinalSummary" }, { target: "PLANNING" }] } },
    PLANNING: {
      initial: "AnalyzeProblem",
      states: {
        AnalyzeProblem: { invoke: modelRound },
        CreatePlan: {
          entry: assign({ plan_invalid: false }),
          invoke: {
            src: "runTodoTool",
            input: ({ context }) => ({ context }),
            onDone: [
              { guard: "outcomeFailed", actions: assign({ plan_invalid: true }), target: "StorePlan" },
              { guard: "nextIsValidate", target: "ValidatePlan", actions: "take" },
              { target: "StorePlan" },
            ],
            onError: { target: at("FAILED"), actions: "fail" },
          },
        },
        ValidatePlan: {
          invoke: {
            src: "runTodoTool",
            input: ({ context }) => ({ context }),
            onDone: [
              { guard: "planRejected", actions: assign({ plan_invalid: true }), target: "StorePlan" },
              { actions: assign({ plan_invalid: false }), target: "StorePlan" },
            ],
            onError: { target: at("FAILED"), actions: "fail" },
          },
        },
        StorePlan: {
          invoke: {
            src: "storePlan",
            input: ({ context }) => ({ context }),
            onDone: next(),
            onError: { target: at("FAILED"), actions: "fail" },
          },
        },
      },
    },
    SOLVING: {
      initial: "CheckNextTask",
      states: {
        CheckNextTask: { invoke: modelRound },
        MarkInProgress: {
          invoke: {
            src: "markInProgress",
            input: ({ context }) => ({ context }),
            onDone: "ExecuteTool",
            onError: { target: at("FAILED"), actions: "fail" },
          },
        },
        ExecuteTool: {
          invoke: {
            src: "executeTool",
            input: ({ context }) => ({ context }),
            onDone: {
              target: "RecordResult",
              actions: assign(({ event }) => ({ outcome: event.output.kind === "outcome" ? event.output.outcome : undefined })),
            },
            onError: { target: at("FAILED"), actions: "fail" },
          },
        },
        RecordResult: {
          invoke: {
            src: "recordResult",
            input: ({ context }) => ({ context }),
            onDone: "MarkCompleted",
            onError: { target: at("FAILED"), actions: "fail" },
          },
        },
        MarkCompleted: {
          invoke: {
            src: "markCompleted",
            input: ({ context }) => ({ context }),
            onDone: next(),
            onError: { target: at("FAILED"), actions: "fail" },
          },
        },
      },
    },
    VERIFYING: {
      initial: "CheckResults",
      states: {
        CheckResults: { invoke: modelRound },
        ValidateAnswer: {
          invoke: {
            src: "validateAnswer",
            input: ({ context }) => ({ context }),
            onDone: [
              {
                guard: "accepted",
                target: "FormatResponse",
                actions: assign(({ event }) => {
                  const verdict = event.output;
                  if (verdict.kind !== "accepted") return {};
                  return { status: verdict.status, ...(verdict.answer ? { answer: verdict.answer } : {}) };
                }),
              },
              // Findings: back to SOLVING with them as questions (docs/design/verification.md).
              { guard: "answerRejected", target: at("SOLVING.CheckNextTask"), reenter: true },
              ...next(["noteVerdict"]),
            ],
            onError: { target: at("FAILED"), actions: "fail" },
          },
        },
        FormatResponse: {
          invoke: {
            src: "formatResponse",
            input: ({ context }) => ({ context }),
            onDone: {
              target: at("FINISHED"),
              actions: assign(({ event }) => ({
                ...(event.output.answer !== undefined ? { answer: event.output.answer } : {}),
                ...(event.output.verification ? { verification: event.output.verification } : {}),
              })),
            },
            onError: { target: at("FAILED"), actions: "fail" },
          },
        },
      },
    },
    FinalSummary: {
      invoke: {
        src: "finalSummary",
        input: ({ context }) => ({ context }),
        onDone: {
          target: "FAILED",
          actions: assign(({ context, event }) => ({ error: limitMessage(context, event.output.text) })),
        },
        onError: { target: "FAILED", actions: assign(({ context }) => ({ error: limitMessage(context) })) },
      },
    },
    FINISHED: { type: "final" },
    FAILED: { type: "final" },
  },
  output: ({ context }) => {
    const failed = context.error !== undefined || context.status === "failure" || context.answer === undefined;
    const error: RunError =
      context.error ??
      (context.status === "failure" ? { code: "GAVE_UP", message: context.answer ?? "" } : { code: "MODEL_BAD_REPLY", message: "the model gave no answer" });
    return failed
      ? { result_type: "error", error }
      : { result_type: "answer", answer: context.answer, ...(context.verification ? { verification: context.verification } : {}) };
  },
});

function limitMessage(context: PlanAndSolveContext, summary?: string): RunError {
  const message = `reached max_iteration (${context.max_iteration}) before the plan was finished`;
  const one = summary?.replace(/\s+/g, " ").trim();
  return { code: "MAX_ITERATION", message: one ? `${message}. Summary so far: ${one.slice(0, 500)}` : message };
}

function errorText(err: unknown): string {
  return err instanceof Error ? (err.message.split("\n")[0] ?? err.name) : String(err);
}
