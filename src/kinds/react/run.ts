import { fromPromise } from "../machine/kit.js";
import type { ReactAgentConfig } from "../../config/types.js";
import { RuntimeError } from "../../errors.js";
import type { ChatMessage, ReasoningItem, ToolCallRequest } from "../../models/types.js";
import { compileTemplate, defaultTemplate, type Template } from "../../prompts/render.js";
import type { AgentRunner } from "../types.js";
import { type CallModelInput, openRecursion, reactMachine, type Understood } from "./machine.js";
import { answerFormat, parseReply } from "./protocol.js";
import { recordContent, renderCurrentState, type RecursionRecord } from "./state.js";
import { userMessage } from "../conversation.js";
import { type ImplementationsOf, runMachine } from "../run-machine.js";

/**
 * Run a `react` agent (docs/design/react-design.md). Each request holds exactly `[0]` the user's
 * request, `[1]` one system prompt with `{{current_state}}` rendered afresh,
 * `[2..n]` one assistant message per finished recursion.
 */
export const runReact: AgentRunner<ReactAgentConfig> = async (ctx, input) => {
  const agent = ctx.agent;
  const template: Template = agent.prompt !== undefined ? compileTemplate(agent.prompt) : defaultTemplate("react");
  const toolbox = ctx.tools();
  const toolNames = toolbox.specs.map((t) => t.name).join(", ");
  // A caller that expects a schema (a planner's Plan) gets it as structured output where the model takes it.
  const format = ctx.expects && toolbox.specs.length === 0 ? answerFormat(ctx.expects) : undefined;
  let planned = false;
  /** The steps the model has marked done, by their text: a step stays done however the plan is reordered. */
  const doneSteps = new Set<string>();
  // The request and each finished recursion keep one message object for the whole run, so the
  // journal's request fingerprint hashes each once (src/engine/journal.ts), not once per request.
  // In a named session, the request comes after the conversation so far (docs/sessions.md); the run's files with it (docs/attachments.md).
  const request: ChatMessage = await userMessage(ctx, input);
  const assistantMessages = new WeakMap<RecursionRecord, ChatMessage>();
  // A recursion's reply's reasoning items (the Responses API) go back with its message (docs/model-servers.md#the-responses-api).
  const reasoningItems = new Map<number, ReasoningItem[]>();
  const assistantMessage = (r: RecursionRecord): ChatMessage => {
    let message = assistantMessages.get(r);
    if (message === undefined) {
      const items = reasoningItems.get(r.recursion);
      message = { role: "assistant", content: recordContent(r), ...(items ? { reasoning_items: items } : {}) };
      assistantMessages.set(r, message);
    }
    return message;
  };

  /** The system prompt; a variable the template names but react does not give is a one-line error. */
  const render = (data: Record<string, unknown>): string => {
    try {
      return template(data);
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      const missing = /^"([^"]+)" not defined/.exec(message)?.[1];
      const why = missing !== undefined ? `names "${missing}", which a react prompt does not have` : `cannot be rendered: ${message.split("\n")[0]}`;
      throw new RuntimeError("CONFIG_INVALID", `the prompt of agent ${agent.name} ${why}; its variables: ${Object.keys(data).join(", ")}`);
    }
  };

  const callModel = async ({ iteration, trace_id, plan, history }: CallModelInput): Promise<Understood> => {
    const system = render({
      agent_name: agent.name,
      description: agent.description,
      tool_names: toolNames,
      iteration,
      max_iteration: agent.max_iteration,
      plan: plan ?? "",
      current_state: renderCurrentState({
        iteration,
        max_iteration: agent.max_iteration,
        ...(plan !== undefined ? { plan } : {}),
        ...(history.length ? { last: history[history.length - 1] } : {}),
      }),
    });
    const messages: ChatMessage[] = [request, { role: "system", content: system }, ...history.map(assistantMessage)];
    const { reply, reading } = await ctx.callModel({
      messages,
      tools: toolbox.specs,
      trace_id,
      ...(format ? { response_format: format } : {}),
      read: (r) => {
        const action = parseReply(r.content, r.tool_calls, r.finish_reason);
        return {
          action,
          action_type: action.action_type,
          observe: action.observe,
          thought: action.thought,
          ...(action.action_type === "INVALID" ? { error: action.error } : {}),
        };
      },
    });
    if (reply.reasoning_items) reasoningItems.set(iteration, reply.reasoning_items);
    const action = reading?.action ?? parseReply(reply.content, reply.tool_calls, reply.finish_reason);
    if (action.action_type !== "ANSWER") return { reply, action };
    // The output guardrails see the answer before the machine takes it: a retry's reason is this recursion's error (docs/guardrails.md).
    const checked = await ctx.checkAnswer(action.answer);
    if (!checked.ok) return { reply, action: { action_type: "INVALID", observe: action.observe, thought: action.thought, error: checked.reason } };
    return { reply, action: { ...action, answer: checked.answer } };
  };

  // The machine's work and events, bound to this step.
  const implementations = {
    actors: {
      callModel: fromPromise<Understood, CallModelInput>(({ input }) => callModel(input)),
      runTools: fromPromise(({ input }: { input: { trace_id: string; calls: ToolCallRequest[] } }) => toolbox.run(input.calls, { trace_id: input.trace_id })),
    },
    actions: {
      openRecursion: openRecursion(ctx.newId),
      startRecursion: (_, { iteration, trace_id, over }) => {
        if (!over) ctx.emit({ type: "recursion.started", iteration }, { trace_id });
      },
      // The plan follows the reply that made it; the steps the model marked done, in any order, are reported done.
      announcePlan: (_, { plan, trace_id }) => {
        if (!plan) return;
        const { steps, marked } = planProgress(plan);
        for (const i of marked) doneSteps.add(stepKey(steps[i - 1] ?? ""));
        const done = steps.flatMap((step, i) => (doneSteps.has(stepKey(step)) ? [i + 1] : []));
        const progress = done.length > 0 ? { finished: done.length, done } : {};
        ctx.emit(planned ? { type: "plan.updated", steps, ...progress } : { type: "plan.created", steps }, { trace_id });
        planned = true;
      },
    },
  } satisfies ImplementationsOf<typeof reactMachine>;
  const output = await runMachine(
    ctx,
    reactMachine,
    implementations,
    { max_iteration: agent.max_iteration },
    {
      start: { type: "RUN" },
      traceId: (context) => (context as { trace_id: string }).trace_id,
    },
  );
  // The answer finishes no step the model did not mark done (docs/design/react-design.md: the chat stream says which steps are done).
  return output;
};

/** The steps of a numbered plan written as text ("1. ...\n2. ..."), without their done marks. */
export function planSteps(plan: string): string[] {
  return planProgress(plan).steps;
}

/** A done mark at the start of a step: `[x]`, `[done]`, `✓`, `✔`, `(done)`. */
const DONE_MARK = /^(?:\[(?:x|X|done)\]|✓|✔|\(done\))\s*/;

/** A plan's steps and which of them carry a done mark (1-based, in any order: the ReAct design's "steps eliminated"). */
export function planProgress(plan: string): { steps: string[]; marked: number[] } {
  const lines = plan
    .split("\n")
    .map((line) => line.replace(/^\s*(?:\d+[.)]|[-*•])\s*/, "").trim())
    .filter((line) => line.length > 0);
  const marked = lines.flatMap((line, i) => (DONE_MARK.test(line) ? [i + 1] : []));
  return { steps: lines.map((line) => line.replace(DONE_MARK, "").trim()), marked };
}

/** A step's identity across plans: its words, case and punctuation aside. */
function stepKey(step: string): string {
  return step
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]+/gu, " ")
    .trim();
}
