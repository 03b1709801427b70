import { createActor, toPromise } from "xstate";
import { RuntimeError } from "../../errors.js";
import type { ChatMessage } from "../../models/types.js";
import { compileTemplate, defaultTemplate, type Template } from "../../prompts/render.js";
import type { AgentRunner } from "../../runtime/types.js";
import { statePath } from "../state-events.js";
import { reactMachine, type ReactEffects } from "./machine.js";
import { recordContent, renderCurrentState } from "./state.js";

/**
 * Run a `react` agent (seed 004). Each request holds exactly `[0]` the user's
 * request, `[1]` one system prompt with `{{current_state}}` rendered afresh,
 * `[2..n]` one assistant message per finished recursion.
 */
export const runReact: AgentRunner = async (ctx, input) => {
  const agent = ctx.agent;
  const template: Template = agent.prompt !== undefined ? compileTemplate(agent.prompt) : defaultTemplate("react");
  const client = ctx.model();
  const toolbox = ctx.tools();
  const toolNames = toolbox.specs.map((t) => t.name).join(", ");
  const durations = new Map<string, number>();
  let planned = false;

  // States are reported at microstep granularity (see below) but sent as one event per run of
  // transient states: a change waits in `pending` until the next thing happens, and then goes
  // first, carrying the states it passed through as `via`.
  let previous = "(start)";
  let pending: { from: string; via: string[]; to: string; trace_id: string } | undefined;
  const flushStates = (): void => {
    if (!pending) return;
    const { from, via, to, trace_id } = pending;
    pending = undefined;
    ctx.emit({ type: "state.changed", machine: "react", from, to, ...(via.length ? { via } : {}) }, trace_id ? { trace_id } : undefined);
  };
  const emit: typeof ctx.emit = (body, extra) => {
    flushStates();
    ctx.emit(body, extra);
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

  const effects: ReactEffects = {
    startRecursion(iteration) {
      const trace_id = ctx.newId();
      emit({ type: "recursion.started", iteration }, { trace_id });
      return trace_id;
    },
    async callModel({ iteration, trace_id, plan, history }) {
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
      const messages: ChatMessage[] = [
        { role: "user", content: input },
        { role: "system", content: system },
        ...history.map((r): ChatMessage => ({ role: "assistant", content: recordContent(r) })),
      ];
      emit({ type: "llm.request", model: client.model, messages: messages.length }, { trace_id });
      const started = Date.now();
      try {
        const reply = await client.chat({
          messages,
          ...(toolbox.specs.length ? { tools: toolbox.specs } : {}),
          signal: ctx.signal,
          agent_id: agent.name,
          onDelta: (text) => emit({ type: "llm.delta", text }, { trace_id }),
        });
        durations.set(trace_id, Date.now() - started);
        return reply;
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        emit({ type: "llm.error", model: client.model, error: message }, { trace_id });
        throw ctx.signal.aborted ? new RuntimeError("ABORTED", "interrupted") : err;
      }
    },
    observed(trace_id, reply, action) {
      emit(
        {
          type: "llm.response",
          model: client.model,
          usage: reply.usage,
          duration_ms: durations.get(trace_id) ?? 0,
          action_type: action.action_type,
          observe: action.observe,
          thought: action.thought,
          ...(reply.content ? { content: reply.content } : {}),
          ...(reply.tool_calls.length ? { tool_calls: reply.tool_calls } : {}),
          ...(action.action_type === "INVALID" ? { error: action.error } : {}),
        },
        { trace_id },
      );
      // The plan follows the reply that made it.
      if (action.action_type === "PLAN" || action.action_type === "REMEND") {
        const steps = planSteps(action.plan);
        emit(planned ? { type: "plan.updated", steps } : { type: "plan.created", steps }, { trace_id });
        planned = true;
      }
    },
    runTools: ({ trace_id, action }) => {
      flushStates();
      return toolbox.run(action.calls, { trace_id });
    },
  };
  // Every microstep is a state change, transient states included (REACH_MAX_ITERATION, THOUGHT,
  // ACTION_TYPE, RE_PLAN, ANSWER, RESULT_TYPE), so the events walk seed 004 state by state, each
  // reported before the model call or tool calls it starts (a subscription sees only the
  // settled state, after its invoked work has begun). The machine is the only one in its system.
  const actor = createActor(reactMachine, {
    input: { max_iteration: agent.max_iteration, effects },
    inspect: (ev) => {
      if (ev.type !== "@xstate.microstep") return;
      const snapshot = ev.snapshot as unknown as { value: unknown; context: { trace_id: string } };
      const to = statePath(snapshot.value);
      if (to === previous) return;
      const trace_id = snapshot.context.trace_id;
      if (pending && pending.trace_id === trace_id) {
        pending.via.push(pending.to);
        pending.to = to;
      } else {
        flushStates();
        pending = { from: previous, via: [], to, trace_id };
      }
      previous = to;
    },
  });
  actor.start();
  const output = await toPromise(actor);
  flushStates();
  return {
    result_type: output.result_type,
    ...(output.answer !== undefined ? { answer: output.answer } : {}),
    ...(output.error !== undefined ? { error: output.error } : {}),
    usage: output.usage,
  };
};

/** The steps of a numbered plan written as text ("1. ...\n2. ..."). */
export function planSteps(plan: string): string[] {
  return plan
    .split("\n")
    .map((line) => line.replace(/^\s*(?:\d+[.)]|[-*•])\s*/, "").trim())
    .filter((line) => line.length > 0);
}
