import type { PlanAndSolveAgentConfig } from "../../config/types.js";
import type { TodoItem } from "../../events/types.js";
import { CUT_OFF_ERROR, isCutOff } from "../cut-off.js";
import { parseToolArguments } from "../../tools/validate-args.js";
import { terminated, terminateArguments } from "../terminate.js";
import type { ChatMessage, ChatResponse, ToolCallRequest, ToolSpec } from "../../models/types.js";
import type { Template } from "../../prompts/render.js";
import type { AgentContext, ToolBox } from "../types.js";
import type { ToolOutcome } from "../../tools/types.js";
import type { PlanAndSolveEffects, SummaryReason, Verdict } from "./types.js";
import type { Memory } from "./memory.js";
import type { TodoLoopContext } from "./todo-context.js";
import { describeOpen, TODO_TOOL_NAMES } from "./todo-tools.js";
import type { RecordedResult } from "./answer-checks.js";
import { verifyAnswer } from "./verifier.js";
import { unreachable } from "../../errors.js";

export interface EffectsDeps {
  ctx: AgentContext<PlanAndSolveAgentConfig>;
  input: string;
  template: Template;
  todos: TodoLoopContext;
  memory: Memory;
  toolbox: ToolBox;
  /** The heuristics' thresholds, shown in the prompt. */
  thresholds: { complete_after: number; block_after: number };
  /** Told the trace_id of each new round, so todo and state events carry it. */
  round(trace_id: string): void;
}

/** The note on items still open when an answer is accepted. */
export const SKIPPED_NOTE = "skipped: the run finished before this item was done";

/**
 * The side effects of the plan_and_solve machine, over one run's memory,
 * todo list, tool box and model. The machine decides; these only act.
 */
export function createEffects(d: EffectsDeps): PlanAndSolveEffects {
  const { ctx, memory, todos, toolbox } = d;
  const agent = ctx.agent;
  let trace_id = "";
  let lastIteration = 0;
  /** The last reply was cut off at the token limit: it is sent back, not taken (docs/servers.md). */
  let cutOff = false;
  /** Successful work-tool results, what VERIFYING checks an answer against. */
  const recorded: RecordedResult[] = [];
  /** Verifications run, and failed, in this step. */
  let verifications = 0;
  let rejections = 0;

  const newRound = (): string => {
    trace_id = ctx.newId();
    d.round(trace_id);
    return trace_id;
  };

  const chat = async (messages: ChatMessage[], tools?: ToolSpec[]): Promise<ChatResponse> => {
    const { reply } = await ctx.callModel({
      messages,
      ...(tools ? { tools } : {}),
      trace_id,
      read: (r) => ({
        action_type: isCutOff(r) ? "INVALID" : r.tool_calls.length > 0 ? "CALL_TOOL" : "ANSWER",
        ...(r.content ? { thought: r.content } : {}),
        ...(isCutOff(r) ? { error: CUT_OFF_ERROR } : {}),
      }),
    });
    memory.addAssistant(reply);
    cutOff = isCutOff(reply);
    return reply;
  };

  /** The system prompt, rendered afresh for each request; every variable is always defined (strict templates). */
  const prompt = (iteration: number, tool_names: string): string =>
    d.template({
      agent_name: agent.name,
      description: agent.description,
      question: d.input,
      tool_names,
      todo_list: todos.render(),
      todo_version: todos.version,
      session_id: todos.session_id,
      iteration,
      max_iteration: agent.max_iteration,
      remaining_iterations: Math.max(0, agent.max_iteration - iteration),
      todo_complete_after: d.thresholds.complete_after,
      todo_block_after: d.thresholds.block_after,
    });

  /** The tool that writes the plan, when the agent has one: then a plan comes first, unless `plan: optional` (docs/design/plan-and-solve-design.md: PLANNING comes first). */
  const writeTool = toolbox.specs.find((t) => t.name === "write_todos" || t.name === "create_todo_list")?.name;
  const planRequired = writeTool !== undefined && agent.plan !== "optional";

  const refuseUnplanned = (call: ToolCallRequest): ToolOutcome =>
    toolbox.refuse(call, `Plan first: write the todo list with ${writeTool} (one concrete step per item), then do the steps. This call was not run.`, {
      trace_id,
    });

  const execute = async (call: ToolCallRequest): Promise<ToolOutcome> => {
    const [outcome] = await toolbox.run([call], { trace_id });
    if (!outcome) unreachable(`the tool box returned no outcome for ${call.name}`);
    if (outcome.ok && call.name !== "terminate" && !TODO_TOOL_NAMES.has(call.name)) {
      const item = todos.current()?.content;
      recorded.push({ tool: call.name, arguments: outcome.arguments, result: outcome.result, ...(item ? { item } : {}) });
    }
    return outcome;
  };

  /**
   * VERIFYING.ValidateAnswer: check a proposed answer; undefined when it
   * passes, else the verdict to go back (or end) with. `answerTo` answers the
   * call or the text in the transcript with the problems.
   */
  const check = async (answer: string, can_retry: boolean, answerTo: (message: string) => void): Promise<Verdict | undefined> => {
    if (agent.verify === "off") return undefined;
    const outcome = await verifyAnswer(ctx, { question: d.input, answer, recorded, unbacked: todos.unbacked(), trace_id, round: ++verifications });
    if (outcome.verdict !== "fail") return undefined;
    rejections += 1;
    const final = rejections > agent.max_verify_rounds || !can_retry;
    const list = outcome.problems.map((p) => `- ${p}`).join("\n");
    answerTo(
      final
        ? `Verification failed:\n${list}\nNo verification round is left; the run ends with these problems.`
        : `Verification failed (${rejections} of ${agent.max_verify_rounds} rounds):\n${list}\n` +
            "Check the recorded tool results, correct the answer (compute again if needed) and finish again with the corrected answer.",
    );
    const error = `the answer failed verification (${agent.verify}) ${rejections} time${rejections === 1 ? "" : "s"}: ${outcome.problems.join("; ")}. Last answer: ${answer.slice(0, 500)}`;
    return { kind: "rejected", problems: outcome.problems, final, error };
  };

  return {
    todos,
    planRequired,
    refuseUnplanned,

    async callModel(iteration) {
      lastIteration = iteration;
      newRound();
      ctx.emit({ type: "recursion.started", iteration }, { trace_id });
      const system = prompt(iteration, toolbox.specs.map((t) => t.name).join(", "));
      return chat(memory.request(system), toolbox.specs);
    },

    execute,
    record: (outcome) => memory.addOutcome(outcome),
    begin: () => void todos.begin(),
    track: (outcome) => void todos.track(outcome.ok, outcome.tool),
    storePlan: () => todos.persist(),

    async verify({ call, text, may_refuse, can_retry }): Promise<Verdict> {
      const open = todos.openItems();
      // Never an answer (docs/servers.md): sent back, or, out of rounds, on to the final summary.
      if (!call && cutOff) {
        memory.addUser(CUT_OFF_ERROR);
        return { kind: "retry" };
      }
      if (!call) {
        // docs/design/plan-and-solve-design.md diagram 5: a reply without tool calls ends the run only when
        // the work is done. Models often narrate ("I will now compute ...")
        // mid-plan; one reminder sends them back to work.
        if (open.length > 0 && may_refuse) {
          memory.addUser(
            textReminder(
              open,
              toolbox.specs.some((t) => t.name === "terminate"),
            ),
          );
          return { kind: "refused" };
        }
        const answer = text?.trim();
        const rejected = answer ? await check(answer, can_retry, (message) => memory.addUser(message)) : undefined;
        if (rejected) return rejected;
        return { kind: "accepted", status: "success", ...(answer ? { answer } : {}) };
      }
      if (open.length > 0 && may_refuse) {
        const error =
          `Not finished: todo items ${describeOpen(open)} are still open. Finish them and mark them completed, ` +
          `mark the ones you no longer need skipped with update_todo_item, or call terminate again to finish ` +
          `anyway (the open items will then be marked skipped).`;
        refuse(call, error);
        return { kind: "refused" };
      }
      const proposed = proposedAnswer(call);
      if (proposed) {
        const rejected = await check(proposed, can_retry, (message) => refuse(call, message));
        if (rejected) return rejected;
      }
      const outcome = await execute(call);
      memory.addOutcome(outcome);
      // Read as every kind reads terminate: from the tool box's outcome (src/kinds/terminate.ts).
      const end = terminated([outcome]);
      if (!end) return { kind: "invalid" };
      const answer = end.answer.trim();
      return { kind: "accepted", status: end.status, ...(answer ? { answer } : {}) };
    },

    async summarize(reason: SummaryReason) {
      memory.closeUnanswered("the run ended");
      newRound();
      memory.addUser(summaryRequest(reason, agent.max_iteration, lastIteration));
      const system = prompt(lastIteration, "");
      try {
        // No tools offered: the model can only answer in text.
        const reply = await chat(memory.request(system));
        const text = isCutOff(reply) ? undefined : reply.content?.trim();
        return text ? { text } : {};
      } catch {
        return {};
      }
    },

    finish(close_items) {
      memory.closeUnanswered("the run ended with terminate");
      return close_items ? todos.closeOpen(SKIPPED_NOTE) : [];
    },
  };

  /** Answer a terminate call with a refusal: the tool never ran, and the events and journal say so. */
  function refuse(call: ToolCallRequest, error: string): void {
    toolbox.refuse(call, error, { trace_id });
    memory.addTool(call.id, `Error: ${error}`);
  }
}

/**
 * The answer a terminate call proposes (not a failure report), checked before
 * the call runs: its arguments read as the tool box will parse them.
 */
function proposedAnswer(call: ToolCallRequest): string | undefined {
  const parsed = parseToolArguments(call.arguments);
  if (!parsed.ok) return undefined;
  const end = terminateArguments(parsed.value);
  return end.status === "success" && end.answer.trim() !== "" ? end.answer.trim() : undefined;
}

/** The reminder after a text reply while items are open; the next text reply is taken as the answer. */
function textReminder(open: TodoItem[], canTerminate: boolean): string {
  const finish = canTerminate ? "If your reply above is the final answer, call terminate with it" : "If your reply above is the final answer, send it again";
  return (
    `Your reply had no tool call, but todo items ${describeOpen(open)} are still open. ` +
    `Continue with the next open item using your tools and keep the list up to date with update_todo_item. ` +
    `${finish} (the open items will then be marked skipped).`
  );
}

function summaryRequest(reason: SummaryReason, max: number, used: number): string {
  if (reason === "max_iteration") {
    return (
      `You have used all ${max} of your model calls (${used} made), so the work stops here. ` +
      "Summarize in plain text what you found so far and which todo items remain undone."
    );
  }
  return "You stopped without giving a final answer. Write the final answer to my request now, in plain text, from the work above.";
}
