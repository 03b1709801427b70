import type { RunError } from "../../errors.js";
import type { Verification } from "../../events/types.js";
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
  /** The answer has findings: back to SOLVING with them as questions (docs/design/verification.md). */
  | { kind: "rejected"; problems: string[] };

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
  /** How the answer was verified. */
  verification?: Verification;
  status?: "success" | "failure";
  error?: RunError;
}

/** What an invoked actor hands back: a model reply or a tool outcome. */
export type Step = { kind: "reply"; reply: ChatResponse } | { kind: "outcome"; outcome: ToolOutcome };
