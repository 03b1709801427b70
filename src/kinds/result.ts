import type { Usage } from "../events/types.js";
import type { AgentResult } from "./types.js";

/** How a machine ended, before usage is added: what every kind's machine outputs. */
export type Outcome = Pick<AgentResult, "result_type" | "answer" | "error">;

/** A machine's final context as its outcome: an error when it holds one, else its answer. */
export function outcomeOf(context: { error?: string | undefined; answer?: string | undefined }): Outcome {
  return context.error !== undefined ? { result_type: "error", error: context.error } : { result_type: "answer", answer: context.answer ?? "" };
}

/** A machine's output as the step's result, without fields it left unset. */
export function stepResult(output: Outcome, usage: Usage): AgentResult {
  return {
    result_type: output.result_type,
    ...(output.answer !== undefined ? { answer: output.answer } : {}),
    ...(output.error !== undefined ? { error: output.error } : {}),
    usage,
  };
}
