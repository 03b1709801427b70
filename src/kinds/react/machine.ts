import { assign, fromPromise, setup } from "xstate";
import { ZERO_USAGE, addUsage, type Usage } from "../../events/types.js";
import type { ChatResponse } from "../../models/types.js";
import type { ToolOutcome } from "../../tools/types.js";
import { parseReply, type ReactAction } from "./protocol.js";
import type { RecursionRecord } from "./state.js";

/** What the machine needs from the outside world; the runner provides it. */
export interface ReactEffects {
  /** Called once per recursion at INPUT; returns the fresh trace_id. */
  startRecursion(iteration: number): string;
  /** One model call with the exact layout `[user, system, ...assistant]`. */
  callModel(input: { iteration: number; trace_id: string; plan?: string; history: RecursionRecord[] }): Promise<ChatResponse>;
  /** Report the understood reply (llm.response event). */
  observed(trace_id: string, reply: ChatResponse, action: ReactAction): void;
  runTools(input: { trace_id: string; action: Extract<ReactAction, { action_type: "CALL_TOOL" }> }): Promise<ToolOutcome[]>;
}

export interface ReactInput {
  max_iteration: number;
  effects: ReactEffects;
}

export interface ReactContext extends ReactInput {
  iteration: number;
  trace_id: string;
  plan?: string;
  history: RecursionRecord[];
  reply?: ChatResponse;
  action?: ReactAction;
  result_type?: "answer" | "error";
  answer?: string;
  error?: string;
  usage: Usage;
}

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
  },
  actors: {
    callModel: fromPromise<ChatResponse, { context: ReactContext }>(({ input: { context } }) =>
      context.effects.callModel({
        iteration: context.iteration,
        trace_id: context.trace_id,
        ...(context.plan !== undefined ? { plan: context.plan } : {}),
        history: context.history,
      }),
    ),
    runTools: fromPromise<ToolOutcome[], { context: ReactContext }>(({ input: { context } }) => {
      const action = context.action;
      if (action?.action_type !== "CALL_TOOL") return Promise.resolve([]);
      return context.effects.runTools({ trace_id: context.trace_id, action });
    }),
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
  context: ({ input }) => ({ ...input, iteration: 0, trace_id: "", history: [], usage: ZERO_USAGE }),
  initial: "INIT",
  states: {
    INIT: { always: "RECURSION" },
    RECURSION: {
      initial: "INPUT",
      onDone: "RESULT_TYPE",
      states: {
        INPUT: {
          entry: assign(({ context }) => {
            const iteration = context.iteration + 1;
            if (iteration > context.max_iteration) return { iteration };
            return { iteration, trace_id: context.effects.startRecursion(iteration), reply: undefined, action: undefined };
          }),
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
              invoke: {
                src: "callModel",
                input: ({ context }) => ({ context }),
                onDone: {
                  target: "THOUGHT",
                  actions: assign(({ context, event }) => ({
                    reply: event.output,
                    action: parseReply(event.output.content, event.output.tool_calls),
                    usage: addUsage(context.usage, event.output.usage),
                  })),
                },
                onError: {
                  target: "#react.RECURSION.EXIT",
                  actions: assign(({ event }) => ({
                    result_type: "error" as const,
                    error: event.error instanceof Error ? event.error.message : String(event.error),
                  })),
                },
              },
            },
            THOUGHT: {
              entry: ({ context }) => {
                if (context.reply && context.action) context.effects.observed(context.trace_id, context.reply, context.action);
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
                input: ({ context }) => ({ context }),
                onDone: {
                  target: "DONE",
                  actions: assign(({ context, event }) => {
                    const record: RecursionRecord = {
                      ...recordBase(context),
                      tool_results: event.output,
                    };
                    const terminate = event.output.find((o) => o.tool === "terminate" && o.ok);
                    if (!terminate) return { history: [...context.history, record] };
                    const args = (terminate.arguments ?? {}) as { answer?: unknown; status?: unknown };
                    const answer = typeof args.answer === "string" ? args.answer : JSON.stringify(args.answer ?? "");
                    return args.status === "failure"
                      ? { history: [...context.history, record], result_type: "error" as const, error: answer }
                      : { history: [...context.history, record], result_type: "answer" as const, answer };
                  }),
                },
                onError: {
                  target: "DONE",
                  actions: assign(({ context, event }) => ({
                    history: [
                      ...context.history,
                      { ...recordBase(context), error: `tools failed: ${String(event.error)}` },
                    ],
                  })),
                },
              },
            },
            RE_PLAN: {
              entry: assign(({ context }) => {
                const action = context.action;
                if (action?.action_type === "INVALID") {
                  return { history: [...context.history, { ...recordBase(context), error: action.error }] };
                }
                const plan = action && "plan" in action ? action.plan : context.plan;
                return { plan, history: [...context.history, { ...recordBase(context), plan }] };
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

function recordBase(context: ReactContext): RecursionRecord {
  const action = context.action;
  return {
    recursion: context.iteration,
    action_type: action?.action_type ?? "INVALID",
    ...(action?.observe ? { observe: action.observe } : {}),
    ...(action?.thought ? { thought: action.thought } : {}),
  };
}
