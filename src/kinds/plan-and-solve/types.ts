import type { RunError } from "../../errors.js";
import type { TodoItem } from "../../events/types.js";
import type { ChatResponse, ToolCallRequest } from "../../models/types.js";
import type { ToolOutcome } from "../../tools/types.js";

/** Why the run asks the model for a summary instead of taking terminate's answer. */
export type SummaryReason = "no_answer" | "max_iteration";

/** How `terminate` (or a text reply) was judged at VERIFYING.ValidateAnswer. */
export type Verdict =
  | { kind: "accepted"; answer?: string; status: "success" | "failure" }
  | { kind: "refused" }
  /** The reply was cut off at the token limit: asked again, without using up the one reminder. */
  | { kind: "retry" }
  | { kind: "invalid" }
  /** The answer failed verification: back to SOLVING with the problems, or, `final`, the run ends with them. */
  | { kind: "rejected"; problems: string[]; final: boolean; error: string };

/** What the machine's actors need from the outside world (src/kinds/plan-and-solve/actors.ts); the runner provides it. */
export interface PlanAndSolveEffects {
  /** Read by guards only: whether a plan exists and whether it is done. */
  todos: { isEmpty(): boolean; allTerminal(): boolean; openItems(): TodoItem[] };
  /** Whether a work tool must wait for a plan: the agent can write one and did not say `plan: optional`. */
  planRequired: boolean;
  /** Answer a work tool called before any plan with a refusal, unrun. */
  refuseUnplanned(call: ToolCallRequest): ToolOutcome;
  /** One round: recursion.started, the prompt rendered afresh, llm.request/response; stores the reply. */
  callModel(iteration: number): Promise<ChatResponse>;
  /** Run one tool call through the tool box (validation, allow-list, events). */
  execute(call: ToolCallRequest): Promise<ToolOutcome>;
  /** Answer a tool call in the transcript. */
  record(outcome: ToolOutcome): void;
  /** SOLVING.MarkInProgress: the active item, or the next pending one, is in progress. */
  begin(): void;
  /** SOLVING.MarkCompleted: the heuristics after a work tool (3 successes, 2 failures). */
  track(outcome: ToolOutcome): void;
  /** PLANNING.StorePlan: persist the session's list. */
  storePlan(): void;
  /**
   * Judge a terminate call (or a text reply when `call` is undefined). With
   * items still open, either is refused once (`may_refuse`: not refused
   * before and a model call left): the terminate's tool message, or a user
   * message after the text, names the open items; the next one is accepted
   * and FormatResponse marks the open items skipped.
   * A model stopping early usually forgot a step; one reminder catches that
   * without ever trapping the run. See docs/plan-and-solve.md.
   */
  verify(input: { call?: ToolCallRequest; text?: string; may_refuse: boolean; can_retry: boolean }): Promise<Verdict>;
  /** The final summary step (docs/design/plan-and-solve-design.md diagram 6): one extra model call without tools. */
  summarize(reason: SummaryReason): Promise<{ text?: string }>;
  /**
   * Answer any call left unanswered; with `close_items`, mark open items
   * skipped (an accepted answer ends the list; a run that failed leaves it
   * open for a follow-up in the same session). Returns the items closed.
   */
  finish(close_items: boolean): TodoItem[];
}

export interface PlanAndSolveInput {
  max_iteration: number;
}

export interface PlanAndSolveContext extends PlanAndSolveInput {
  /** Model calls made so far (the summary call is not counted). */
  iteration: number;
  /** Calls of the last reply not yet handled; the head is next. */
  queue: ToolCallRequest[];
  current?: ToolCallRequest;
  outcome?: ToolOutcome;
  /** A reply without tool calls: its text is the answer unless items are still open. */
  text?: string;
  /** The early terminate was refused once already. */
  refused: boolean;
  /** validate_plan found problems: plan again before solving. */
  plan_invalid: boolean;
  /** `current` is a work tool called before any plan: AnalyzeProblem refuses it instead of asking the model. */
  unplanned: boolean;
  answer?: string;
  status?: "success" | "failure";
  error?: RunError;
}

/** What an invoked actor hands back: a model reply or a tool outcome. */
export type Step = { kind: "reply"; reply: ChatResponse } | { kind: "outcome"; outcome: ToolOutcome };
