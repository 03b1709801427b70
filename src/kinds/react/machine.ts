import type { AnyActorRef } from "xstate";
import { assign, setup } from "../../xstate-bundle.js";
import { ZERO_USAGE, addUsage, type Usage } from "../../events/types.js";
import type { ChatResponse, ToolCallRequest } from "../../models/types.js";
import type { ToolOutcome } from "../../tools/types.js";
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

/**
 * The run's side of the machine, bound by the runner (src/kinds/react/run.ts):
 * the machine's actions, declared in `setup`, call these. They come
 * with the input rather than through `machine.provide`, which rebuilds the
 * whole machine (~0.4 ms) for every run.
 */
export interface ReactPorts {
  callModel(input: CallModelInput): Promise<Understood>;
  runTools(input: { trace_id: string; calls: ToolCallRequest[] }): Promise<ToolOutcome[]>;
  /** `recursion.started`, before anything else of the recursion. */
  startRecursion(params: { iteration: number; trace_id: string }): void;
  /** `plan.created` / `plan.updated` for a plan the model wrote. */
  announcePlan(params: { plan: string; trace_id: string }): void;
}

export interface ReactInput {
  max_iteration: number;
  /** A fresh trace_id for each recursion. */
  newId: () => string;
  ports: ReactPorts;
}

export interface ReactContext extends ReactInput {
  iteration: number;
  trace_id: string;
  plan?: string;
  history: RecursionRecord[];
  action?: ReactAction;
  result_type?: "answer" | "error";
  answer?: string;
  error?: string;
  usage: Usage;
}

/**
 * What the machine hears: RUN to begin, and the outcome of the work a state
 * started (OBSERVE's model call, CALL_TOOL's tool calls). The work is started
 * by the state's entry action and reports back as an event rather than as an
 * invoked actor: an actor per call cost a child actor's set-up, snapshots and
 * stop for every step (docs/performance.md).
 */
export type ReactEvent =
  | { type: "RUN" }
  | { type: "MODEL.DONE"; output: Understood }
  | { type: "MODEL.FAILED"; error: unknown }
  | { type: "TOOLS.DONE"; output: ToolOutcome[] }
  | { type: "TOOLS.FAILED"; error: unknown };

export interface ReactOutput {
  result_type: "answer" | "error";
  answer?: string;
  error?: string;
  usage: Usage;
  iterations: number;
}


/**
 * The recursive ReAct agent of seed 004, state for state:
 * INIT → RECURSION{INPUT → REACH_MAX_ITERATION → CALL_LLM{OBSERVE → THOUGHT →
 * ACTION_TYPE → CALL_TOOL | RE_PLAN | ANSWER}} → RESULT_TYPE → RECURSION or done.
 */
export const reactMachine = setup({
  types: {
    context: {} as ReactContext,
    input: {} as ReactInput,
    output: {} as ReactOutput,
    events: {} as ReactEvent,
  },
  actions: {
    /** OBSERVE's work: the model call, whose outcome comes back as MODEL.DONE or MODEL.FAILED. */
    callModel: ({ context, self }) => {
      const call: CallModelInput = {
        iteration: context.iteration,
        trace_id: context.trace_id,
        ...(context.plan !== undefined ? { plan: context.plan } : {}),
        history: context.history,
      };
      settle(self, () => context.ports.callModel(call), "MODEL");
    },
    /** CALL_TOOL's work: the tool calls, whose outcomes come back as TOOLS.DONE or TOOLS.FAILED. */
    runTools: ({ context, self }) => {
      const calls = context.action?.action_type === "CALL_TOOL" ? context.action.calls : [];
      const trace_id = context.trace_id;
      settle(self, () => context.ports.runTools({ trace_id, calls }), "TOOLS");
    },
    /** `recursion.started`, before anything else of the recursion (none past max_iteration). */
    startRecursion: ({ context }, params: { iteration: number; trace_id: string; over: boolean }) => {
      if (!params.over) context.ports.startRecursion(params);
    },
    announcePlan: ({ context }, params: { plan: string; trace_id: string }) => {
      if (params.plan) context.ports.announcePlan(params);
    },
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
  context: ({ input }) => Object.assign({}, input, { iteration: 0, trace_id: "", history: [], usage: ZERO_USAGE }),
  initial: "INIT",
  states: {
    // RUN comes once the actor has started, so the first recursion's work runs in order (xstate
    // defers the actions of the initial state until start(), after the actors it invokes).
    INIT: { on: { RUN: "RECURSION" } },
    RECURSION: {
      initial: "INPUT",
      onDone: "RESULT_TYPE",
      states: {
        INPUT: {
          entry: [
            assign(({ context }) => {
              const iteration = context.iteration + 1;
              if (iteration > context.max_iteration) return { iteration };
              return { iteration, trace_id: context.newId(), action: undefined };
            }),
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
                error: `reached max_iteration (${context.max_iteration}) without an answer`,
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
              entry: "callModel",
              on: {
                "MODEL.DONE": {
                  target: "THOUGHT",
                  actions: assign(({ context, event }) => ({
                    action: event.output.action,
                    usage: addUsage(context.usage, event.output.reply.usage),
                  })),
                },
                "MODEL.FAILED": {
                  target: "#react.RECURSION.EXIT",
                  actions: assign(({ event }) => ({
                    result_type: "error" as const,
                    error: event.error instanceof Error ? event.error.message : String(event.error),
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
              entry: "runTools",
              on: {
                "TOOLS.DONE": {
                  target: "DONE",
                  actions: assign(({ context, event }) => {
                    const record = recordOf(context, { tool_results: event.output });
                    const terminate = event.output.find((o) => o.tool === "terminate" && o.ok);
                    if (!terminate) return { history: [...context.history, record] };
                    const args = (terminate.arguments ?? {}) as { answer?: unknown; status?: unknown };
                    const answer = typeof args.answer === "string" ? args.answer : JSON.stringify(args.answer ?? "");
                    return args.status === "failure"
                      ? { history: [...context.history, record], result_type: "error" as const, error: answer }
                      : { history: [...context.history, record], result_type: "answer" as const, answer };
                  }),
                },
                "TOOLS.FAILED": {
                  target: "DONE",
                  actions: assign(({ context, event }) => ({
                    history: [
                      ...context.history,
                      recordOf(context, { error: `tools failed: ${String(event.error)}` }),
                    ],
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
      always: [{ guard: "isFinished", target: "DONE" }, { target: "RECURSION", reenter: true }],
    },
    DONE: { type: "final" },
  },
  output: ({ context }) => ({
    result_type: context.result_type ?? "error",
    ...(context.answer !== undefined ? { answer: context.answer } : {}),
    ...(context.error !== undefined ? { error: context.error } : {}),
    usage: context.usage,
    iterations: Math.min(context.iteration, context.max_iteration),
  }),
});

/**
 * Start `work` once the current macrostep is over and send its outcome back to
 * the machine as `<kind>.DONE` or `<kind>.FAILED`. Entry actions run before
 * the state reporter has seen the step into their state; starting the work a
 * microtask later keeps the state's `state.changed` before the events of its
 * work, as an invoked actor (started after the macrostep) did.
 */
function settle<T>(self: AnyActorRef, work: () => Promise<T>, kind: "MODEL" | "TOOLS"): void {
  queueMicrotask(() => {
    let pending: Promise<T>;
    try {
      pending = work();
    } catch (error) {
      pending = Promise.reject(error);
    }
    pending.then(
      (output) => self.send({ type: `${kind}.DONE`, output }),
      (error: unknown) => self.send({ type: `${kind}.FAILED`, error }),
    );
  });
}

/** What the recursion leaves behind: its action, and its results, plan or error. */
function recordOf(context: ReactContext, outcome: Pick<RecursionRecord, "tool_results" | "plan" | "error">): RecursionRecord {
  const action = context.action;
  const record: RecursionRecord = { recursion: context.iteration, action_type: action?.action_type ?? "INVALID" };
  if (action?.observe) record.observe = action.observe;
  if (action?.thought) record.thought = action.thought;
  return Object.assign(record, outcome);
}
