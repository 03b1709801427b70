import type { RunError } from "../errors.js";
import type { Outcome } from "./types.js";

export type { Outcome } from "./types.js";

/** A machine's final context as its outcome: an error when it holds one, else its answer. */
export function outcomeOf(context: { error?: RunError | undefined; answer?: string | undefined }): Outcome {
  return context.error !== undefined ? { result_type: "error", error: context.error } : { result_type: "answer", answer: context.answer ?? "" };
}
