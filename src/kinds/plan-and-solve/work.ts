/**
 * What the plan_and_solve machine's actors do, one named function each, over
 * one step's `Work` (its transcript, todo list, tool box and model); the
 * runner binds them to the machine (src/kinds/plan-and-solve/run.ts).
 */
import type { PlanAndSolveAgentConfig } from "../../config/types.js";
import type { TodoItem, Verification } from "../../events/types.js";
import { CUT_OFF_ERROR, isCutOff } from "../cut-off.js";
import { parseToolArguments } from "../../tools/validate-args.js";
import { terminated, terminateArguments } from "../terminate.js";
import type { ChatMessage, ChatResponse, ToolCallRequest, ToolSpec } from "../../models/types.js";
import type { Template } from "../../prompts/render.js";
import type { AgentContext, ToolBox } from "../types.js";
import type { ToolOutcome } from "../../tools/types.js";
import type { SummaryReason, Verdict } from "./types.js";
import type { Memory } from "./memory.js";
import type { TodoLoopContext } from "./todo-context.js";
import { describeOpen, TODO_TOOL_NAMES } from "./todo-tools.js";
import type { RecordedResult } from "./answer-checks.js";
import { verifyAnswer } from "./verifier.js";
import { unreachable } from "../../errors.js";

/** One plan_and_solve step's work: what its machine's actors act on (the machine decides, these act). */
export interface Work {
  ctx: AgentContext<PlanAndSolveAgentConfig>;
  input: string;
  template: Template;
  todos: TodoLoopContext;
  memory: Memory;
  toolbox: ToolBox;
  /** The heuristics' thresholds, shown in the prompt. */
  thresholds: { complete_after: number; block_after: number };
  /** The round under way: its trace_id (its todo events and states carry it; "" before the first) and its model call. */
  round: { trace_id: string; iteration: number };
  /** The tool that writes the plan, when the agent has one. */
  writeTool: string | undefined;
  /** Whether a work tool must wait for a plan: the agent can write one and did not say `plan: optional` (PLANNING comes first). */
  planRequired: boolean;
  /** The last reply was cut off at the token limit: it is sent back, not taken (docs/model-servers.md). */
  cutOff: boolean;
  /** Successful work-tool results, what VERIFYING checks an answer against. */
  recorded: RecordedResult[];
  /** Verifications run, and sent back, in this step. */
  verifications: number;
  rejections: number;
  /** The last verification's result: the answer's `verification` (docs/design/verification.md). */
  verification: Verification | undefined;
}

/** The note on items still open when an answer is accepted. */
export const SKIPPED_NOTE = "skipped: the run finished before this item was done";

/** A step's work before its first round. */
export function startWork(deps: Pick<Work, "ctx" | "input" | "template" | "todos" | "memory" | "toolbox" | "thresholds" | "round">): Work {
  const writeTool = deps.toolbox.specs.find((t) => t.name === "write_todos" || t.name === "create_todo_list")?.name;
  return {
    ...deps,
    writeTool,
    planRequired: writeTool !== undefined && deps.ctx.agent.plan !== "optional",
    cutOff: false,
    recorded: [],
    verifications: 0,
    rejections: 0,
    verification: undefined,
  };
}

/** AnalyzeProblem, CheckNextTask, CheckResults: one round, `recursion.started`, the prompt rendered afresh, the reply kept. */
export function askModel(work: Work, iteration: number): Promise<ChatResponse> {
  work.round.iteration = iteration;
  newRound(work);
  work.ctx.emit({ type: "recursion.started", iteration }, { trace_id: work.round.trace_id });
  const specs = work.toolbox.specs;
  return chat(work, work.memory.request(prompt(work, specs.map((t) => t.name).join(", "))), specs);
}

/** Answer a work tool called before any plan with a refusal, unrun. */
export function refuseUnplanned(work: Work, call: ToolCallRequest): ToolOutcome {
  const error = `Plan first: write the todo list with ${work.writeTool} (one concrete step per item), then do the steps. This call was not run.`;
  return work.toolbox.refuse(call, error, { trace_id: work.round.trace_id });
}

/** Run one tool call through the tool box (validation, allow-list, events); a work tool's success is recorded for VERIFYING. */
export async function execute(work: Work, call: ToolCallRequest): Promise<ToolOutcome> {
  const [outcome] = await work.toolbox.run([call], { trace_id: work.round.trace_id });
  if (!outcome) unreachable(`the tool box returned no outcome for ${call.name}`);
  if (outcome.ok && call.name !== "terminate" && !TODO_TOOL_NAMES.has(call.name)) {
    const item = work.todos.current()?.content;
    work.recorded.push({ tool: call.name, arguments: outcome.arguments, result: outcome.result, ...(item ? { item } : {}) });
  }
  return outcome;
}

/**
 * VERIFYING.ValidateAnswer: judge a terminate call (or a text reply when
 * `call` is undefined). With items still open, either is refused once
 * (`may_refuse`: not refused before and a model call left): the terminate's
 * tool message, or a user message after the text, names the open items; the
 * next one is accepted and FormatResponse marks the open items skipped.
 * A model stopping early usually forgot a step; one reminder catches that
 * without ever trapping the run. See docs/plan-and-solve.md.
 */
export function verify(work: Work, input: { call?: ToolCallRequest; text?: string; may_refuse: boolean; can_retry: boolean }): Promise<Verdict> {
  return input.call ? verifyTerminate(work, input.call, input) : verifyText(work, input.text, input);
}

type Chances = { may_refuse: boolean; can_retry: boolean };

/** A reply without tool calls: an answer only when the work is done (docs/design/plan-and-solve-design.md diagram 5). */
async function verifyText(work: Work, text: string | undefined, { may_refuse, can_retry }: Chances): Promise<Verdict> {
  const { memory, todos } = work;
  // Never an answer (docs/model-servers.md): sent back, or, out of rounds, on to the final summary.
  if (work.cutOff) {
    memory.addUser(CUT_OFF_ERROR);
    return { kind: "retry" };
  }
  // Models often narrate ("I will now compute ...") mid-plan; one reminder sends them back to work.
  const open = todos.openItems();
  if (open.length > 0 && may_refuse) {
    memory.addUser(
      textReminder(
        open,
        work.toolbox.specs.some((t) => t.name === "terminate"),
      ),
    );
    return { kind: "refused" };
  }
  const answer = text?.trim();
  const rejected = answer ? await check(work, answer, can_retry, (message) => memory.addUser(message)) : undefined;
  if (rejected) return rejected;
  return { kind: "accepted", status: "success", ...(answer ? { answer } : {}) };
}

/** A terminate call: refused while items are open, its answer checked before it runs, then read from the tool box's outcome. */
async function verifyTerminate(work: Work, call: ToolCallRequest, { may_refuse, can_retry }: Chances): Promise<Verdict> {
  const open = work.todos.openItems();
  if (open.length > 0 && may_refuse) {
    const error =
      `Not finished: todo items ${describeOpen(open)} are still open. Finish them and mark them completed, ` +
      `mark the ones you no longer need skipped with update_todo_item, or call terminate again to finish ` +
      `anyway (the open items will then be marked skipped).`;
    refuse(work, call, error);
    return { kind: "refused" };
  }
  const proposed = proposedAnswer(call);
  if (proposed) {
    const rejected = await check(work, proposed, can_retry, (message) => refuse(work, call, message));
    if (rejected) return rejected;
  }
  const outcome = await execute(work, call);
  work.memory.addOutcome(outcome);
  // Read as every kind reads terminate: from the tool box's outcome (src/kinds/terminate.ts).
  const end = terminated([outcome]);
  if (!end) return { kind: "invalid" };
  const answer = end.answer.trim();
  return { kind: "accepted", status: end.status, ...(answer ? { answer } : {}) };
}

/** The final summary step (docs/design/plan-and-solve-design.md diagram 6): one extra model call without tools. */
export async function summarize(work: Work, reason: SummaryReason): Promise<{ text?: string }> {
  const { memory } = work;
  memory.closeUnanswered("the run ended");
  newRound(work);
  memory.addUser(summaryRequest(reason, work.ctx.agent.max_iteration, work.round.iteration));
  try {
    // No tools offered: the model can only answer in text.
    const reply = await chat(work, memory.request(prompt(work, "")));
    const text = isCutOff(reply) ? undefined : reply.content?.trim();
    return text ? { text } : {};
  } catch {
    return {};
  }
}

/**
 * Answer any call left unanswered; with `close_items`, mark open items
 * skipped (an accepted answer ends the list; a run that failed leaves it
 * open for a follow-up in the same session). Returns the items closed.
 */
export function finish(work: Work, close_items: boolean): TodoItem[] {
  work.memory.closeUnanswered("the run ended with terminate");
  return close_items ? work.todos.closeOpen(SKIPPED_NOTE) : [];
}

function newRound(work: Work): void {
  work.round.trace_id = work.ctx.newId();
}

/** One model call of the round under way; the reply goes into the transcript. */
async function chat(work: Work, messages: ChatMessage[], tools?: ToolSpec[]): Promise<ChatResponse> {
  const { reply } = await work.ctx.callModel({
    messages,
    ...(tools ? { tools } : {}),
    trace_id: work.round.trace_id,
    read: (r) => ({
      action_type: isCutOff(r) ? "INVALID" : r.tool_calls.length > 0 ? "CALL_TOOL" : "ANSWER",
      ...(r.content ? { thought: r.content } : {}),
      ...(isCutOff(r) ? { error: CUT_OFF_ERROR } : {}),
    }),
  });
  work.memory.addAssistant(reply);
  work.cutOff = isCutOff(reply);
  return reply;
}

/** The system prompt, rendered afresh for each request; every variable is always defined (strict templates). */
function prompt(work: Work, tool_names: string): string {
  const { agent } = work.ctx;
  const { iteration } = work.round;
  return work.template({
    agent_name: agent.name,
    description: agent.description,
    question: work.input,
    tool_names,
    todo_list: work.todos.render(),
    todo_version: work.todos.version,
    session_id: work.todos.session_id,
    iteration,
    max_iteration: agent.max_iteration,
    remaining_iterations: Math.max(0, agent.max_iteration - iteration),
    todo_complete_after: work.thresholds.complete_after,
    todo_block_after: work.thresholds.block_after,
  });
}

/**
 * Check a proposed answer (docs/design/verification.md): undefined when it
 * passes; with findings, while a round is left, the verdict that sends them
 * back to the model as questions (`answerTo` answers the call or the text in
 * the transcript); past the rounds, the answer accepted as the run's answer,
 * marked unverified with its findings.
 */
async function check(work: Work, answer: string, can_retry: boolean, answerTo: (message: string) => void): Promise<Verdict | undefined> {
  const { ctx, todos } = work;
  const { agent } = ctx;
  if (agent.verify === "off") return undefined;
  const round = ++work.verifications;
  const outcome = await verifyAnswer(ctx, {
    question: work.input,
    answer,
    recorded: work.recorded,
    plan: todos
      .render()
      .split("\n")
      .filter((line) => line.trim() !== ""),
    trace_id: work.round.trace_id,
    round,
  });
  if (outcome.verdict !== "fail") {
    work.verification = { status: "passed", findings: [] };
    return undefined;
  }
  work.verification = { status: "failed", findings: outcome.problems, ...(agent.verify === "strict" ? { strict: true } : {}) };
  if (work.rejections >= agent.max_verify_rounds || !can_retry) return undefined;
  const rejections = ++work.rejections;
  const list = outcome.problems.map((p) => `- ${p}`).join("\n");
  answerTo(
    `Before this answer is given, please check (${rejections} of ${agent.max_verify_rounds}):\n${list}\n` +
      "Compute what no tool has computed, or correct the answer from the recorded tool results, then finish again with the answer.",
  );
  return { kind: "rejected", problems: outcome.problems };
}

/** Answer a terminate call with a refusal: the tool never ran, and the events and journal say so. */
function refuse(work: Work, call: ToolCallRequest, error: string): void {
  work.toolbox.refuse(call, error, { trace_id: work.round.trace_id });
  work.memory.addTool(call.id, `Error: ${error}`);
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
