import { type AnyEventObject, setup } from "xstate";
import { assign, fromPromise } from "../machine/kit.js";
import type { ChatResponse, ToolCallRequest } from "../../models/types.js";
import type { ToolOutcome } from "../../tools/types.js";
import { outcomeOf, type Outcome } from "../result.js";
import { terminated } from "../terminate.js";
import { codeOf, type RunError, unreachable } from "../../errors.js";
import type { ReactAction } from "./protocol.js";
import type { RecursionRecord } from "./state.js";

/** What one model call of a recursion is given. */
export interface CallModelInput {
  iteration: number;
  trace_id: string;
  plan?: string;
  history: RecursionRecord[];
}

/** A reply and how the protocol reads it. */
export interface Understood {
  reply: ChatResponse;
  action: ReactAction;
}

export interface ReactInput {
  max_iteration: number;
}

export interface ReactContext extends ReactInput {
  iteration: number;
  trace_id: string;
  plan?: string;
  history: RecursionRecord[];
  action?: ReactAction;
  result_type?: "answer" | "error";
  answer?: string;
  error?: RunError;
}

const notProvided = (what: string) => async () => unreachable(`react machine: ${what} was not provided`);

/**
 * INPUT's bookkeeping: the next recursion, with a fresh trace_id from the
 * run's ids. The runner provides it with the step's `newId`
 * (src/kinds/react/run.ts); nothing of the run goes in the context.
 */
export function openRecursion(newId: () => string) {
  // Typed for any event and actor: the machine's declared ones are narrower than `assign` infers here, outside `setup`.
  // biome-ignore lint/suspicious/noExplicitAny: see above
  return assign<ReactContext, AnyEventObject, undefined, AnyEventObject, any>(({ context }) => {
    const iteration = context.iteration + 1;
    if (iteration > context.max_iteration) return { iteration };
    return { iteration, trace_id: newId(), action: undefined };
  });
}

/**
 * The recursive ReAct agent of docs/design/react-design.md, state for state:
 * INIT → RECURSION{INPUT → REACH_MAX_ITERATION → CALL_LLM{OBSERVE → THOUGHT →
 * ACTION_TYPE → CALL_TOOL | RE_PLAN | ANSWER}} → RESULT_TYPE → RECURSION or done.
 */
export const reactMachine = setup({
  types: {
    context: {} as ReactContext,
    input: {} as ReactInput,
    output: {} as Outcome,
  },
  // The work and the events of a recursion are the run's: the runner binds them with `provide` (src/kinds/react/run.ts).
  actors: {
    /** OBSERVE's work: the model call. */
    callModel: fromPromise<Understood, CallModelInput>(notProvided("callModel")),
    /** CALL_TOOL's work: the reply's tool calls, through the step's tool box. */
    runTools: fromPromise<ToolOutcome[], { trace_id: string; calls: ToolCallRequest[] }>(notProvided("runTools")),
  },
  actions: {
    openRecursion: openRecursion(() => ""),
    /** `recursion.started`, before anything else of the recursion (none past max_iteration). */
    startRecursion: (_, _params: { iteration: number; trace_id: string; over: boolean }) => {},
    /** `plan.created` / `plan.updated` for the plan a reply wrote (none when it wrote none). */
    announcePlan: (_, _params: { plan: string; trace_id: string }) => {},
  },
  guards: {
    overMaxIteration: ({ context }) => context.iteration > context.max_iteration,
    isCallTool: ({ context }) => context.action?.action_type === "CALL_TOOL",
    isPlan: ({ context }) => {
      const t = context.action?.action_type;
      return t === "PLAN" || t === "REMEND" || t === "INVALID";
    },
    isAnswer: ({ context }) => context.action?.action_type === "ANSWER",
    isFinished: ({ context }) => context.result_type !== undefined,
  },
}).createMachine({
  id: "react",
  context: ({ input }) => ({ max_iteration: input.max_iteration, iteration: 0, trace_id: "", history: [] }),
  initial: "INIT",
  states: {
    // RUN comes once the actor has started (runMachine's `start`), so the first recursion's work runs in order.
    INIT: { on: { RUN: "RECURSION" } },
    RECURSION: {
      initial: "INPUT",
      onDone: "RESULT_TYPE",
      states: {
        INPUT: {
          entry: [
            "openRecursion",
            {
              type: "startRecursion",
              params: ({ context }) => ({
                iteration: context.iteration,
                trace_id: context.trace_id,
                over: context.iteration > context.max_iteration,
              }),
            },
          ],
          always: "REACH_MAX_ITERATION",
        },
        REACH_MAX_ITERATION: {
          always: [
            {
              guard: "overMaxIteration",
              target: "EXIT",
              actions: assign(({ context }) => ({
                result_type: "error" as const,
                error: { code: "MAX_ITERATION" as const, message: `reached max_iteration (${context.max_iteration}) without an answer` },
              })),
            },
            { target: "CALL_LLM" },
          ],
        },
        CALL_LLM: {
          initial: "OBSERVE",
          onDone: "EXIT",
          states: {
            OBSERVE: {
              invoke: {
                src: "callModel",
                input: ({ context }) => ({
                  iteration: context.iteration,
                  trace_id: context.trace_id,
                  history: context.history,
                  ...(context.plan !== undefined ? { plan: context.plan } : {}),
                }),
                onDone: { target: "THOUGHT", actions: assign(({ event }) => ({ action: event.output.action })) },
                onError: {
                  target: "#react.RECURSION.EXIT",
                  actions: assign(({ event }) => ({
                    result_type: "error" as const,
                    error: { code: codeOf(event.error), message: event.error instanceof Error ? event.error.message : String(event.error) },
                  })),
                },
              },
            },
            THOUGHT: {
              // The plan a reply wrote is announced as the reply is understood.
              entry: {
                type: "announcePlan",
                params: ({ context }) => ({
                  plan: context.action && "plan" in context.action ? context.action.plan : "",
                  trace_id: context.trace_id,
                }),
              },
              always: "ACTION_TYPE",
            },
            ACTION_TYPE: {
              always: [
                { guard: "isCallTool", target: "CALL_TOOL" },
                { guard: "isPlan", target: "RE_PLAN" },
                { guard: "isAnswer", target: "ANSWER" },
              ],
            },
            CALL_TOOL: {
              invoke: {
                src: "runTools",
                input: ({ context }) => ({
                  trace_id: context.trace_id,
                  calls: context.action?.action_type === "CALL_TOOL" ? context.action.calls : [],
                }),
                onDone: {
                  target: "DONE",
                  actions: assign(({ context, event }) => {
                    const history = [...context.history, recordOf(context, { tool_results: event.output })];
                    // A successful `terminate` ends the run with its answer (src/kinds/terminate.ts).
                    const end = terminated(event.output);
                    if (!end) return { history };
                    return end.status === "failure"
                      ? { history, result_type: "error" as const, error: { code: "GAVE_UP" as const, message: end.answer } }
                      : { history, result_type: "answer" as const, answer: end.answer };
                  }),
                },
                onError: {
                  target: "DONE",
                  actions: assign(({ context, event }) => ({
                    history: [...context.history, recordOf(context, { error: `tools failed: ${String(event.error)}` })],
                  })),
                },
              },
            },
            RE_PLAN: {
              entry: assign(({ context }) => {
                const action = context.action;
                if (action?.action_type === "INVALID") {
                  return { history: [...context.history, recordOf(context, { error: action.error })] };
                }
                const plan = action && "plan" in action ? action.plan : context.plan;
                return { plan, history: [...context.history, recordOf(context, plan !== undefined ? { plan } : {})] };
              }),
              always: "DONE",
            },
            ANSWER: {
              entry: assign(({ context }) => ({
                result_type: "answer" as const,
                answer: context.action?.action_type === "ANSWER" ? context.action.answer : "",
              })),
              always: "DONE",
            },
            DONE: { type: "final" },
          },
        },
        EXIT: { type: "final" },
      },
    },
    RESULT_TYPE: {
      always: [
        { guard: "isFinished", target: "DONE" },
        { target: "RECURSION", reenter: true },
      ],
    },
    DONE: { type: "final" },
  },
  output: ({ context }) => outcomeOf(context),
});

/** What the recursion leaves behind: its action, and its results, plan or error. */
function recordOf(context: ReactContext, outcome: Pick<RecursionRecord, "tool_results" | "plan" | "error">): RecursionRecord {
  const action = context.action;
  const record: RecursionRecord = { recursion: context.iteration, action_type: action?.action_type ?? "INVALID" };
  if (action?.observe) record.observe = action.observe;
  if (action?.thought) record.thought = action.thought;
  return Object.assign(record, outcome);
}
