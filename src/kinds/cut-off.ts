/**
 * A reply cut off at the token limit (`finish_reason: "length"`) is never an
 * answer (docs/model-servers.md#real-servers): every kind sends it back to the
 * model as the error of its round, in these words.
 */
import type { ChatResponse } from "../models/types.js";

export const CUT_OFF_ERROR = "your reply was cut off at the token limit (finish_reason: length) before it was complete; answer again, shorter";

export function isCutOff(reply: Pick<ChatResponse, "finish_reason">): boolean {
  return reply.finish_reason === "length";
}
