/**
 * How a `terminate` call ends a run, read one way by every kind: from the
 * tool box's outcome, whose arguments the tool box parsed and checked
 * against terminate's schema (docs/design/kinds.md#terminate-and-cut-off-replies).
 */
import type { ToolOutcome } from "../tools/types.js";

/** The end a terminate call asks for: its answer, as a success or a failure. */
export interface Terminated {
  status: "success" | "failure";
  answer: string;
}

/** The end the first successful terminate among `outcomes` asks for, if any. */
export function terminated(outcomes: readonly ToolOutcome[]): Terminated | undefined {
  const call = outcomes.find((o) => o.tool === "terminate" && o.ok);
  return call ? terminateArguments(call.arguments) : undefined;
}

/** Terminate's arguments (as the tool box parsed them) as the end they ask for. */
export function terminateArguments(args: unknown): Terminated {
  const { answer, status } = (typeof args === "object" && args !== null ? args : {}) as { answer?: unknown; status?: unknown };
  return { status: status === "failure" ? "failure" : "success", answer: typeof answer === "string" ? answer : JSON.stringify(answer ?? "") };
}
