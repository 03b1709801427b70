import type { ChatMessage, ChatResponse, ToolCallRequest } from "../../models/types.js";
import type { ToolOutcome } from "../../tools/types.js";

/**
 * The transcript of one plan_and_solve step (docs/design/plan-and-solve-design.md diagram 6): the user's
 * message, then assistant messages (with their `tool_calls`) each followed by
 * one tool message per call, in call order. The system prompt is not stored:
 * it is rendered afresh each round and placed first by `request`.
 */
export class Memory {
  private readonly messages: ChatMessage[] = [];

  /** `first`: the user's request, or its message with the run's attachments (`userMessage`, docs/attachments.md). */
  constructor(first: string | Extract<ChatMessage, { role: "user" }>) {
    this.messages.push(typeof first === "string" ? { role: "user", content: first } : first);
  }

  /** Store the model's reply; its tool calls are now owed an answer each. */
  addAssistant(reply: ChatResponse): void {
    this.messages.push({
      role: "assistant",
      content: reply.content,
      ...(reply.tool_calls.length > 0 ? { tool_calls: reply.tool_calls } : {}),
      // Sent back on the Responses API only (docs/model-servers.md#the-responses-api).
      ...(reply.reasoning_items ? { reasoning_items: reply.reasoning_items } : {}),
    });
  }

  /** Answer one tool call with its outcome. */
  addOutcome(outcome: ToolOutcome): void {
    this.addTool(outcome.call_id, toolContent(outcome));
  }

  addTool(call_id: string, content: string): void {
    this.messages.push({ role: "tool", tool_call_id: call_id, content });
  }

  /** A request of ours to the model (the final summary step). */
  addUser(content: string): void {
    this.messages.push({ role: "user", content });
  }

  /** Tool calls of the last assistant message that have no tool message yet. */
  unanswered(): ToolCallRequest[] {
    let i = this.messages.length - 1;
    const answered = new Set<string>();
    for (; i >= 0; i--) {
      const m = this.messages[i];
      if (m?.role === "tool") answered.add(m.tool_call_id);
      else break;
    }
    const last = this.messages[i];
    if (last?.role !== "assistant" || !last.tool_calls) return [];
    return last.tool_calls.filter((c) => !answered.has(c.id));
  }

  /** Answer every open call with an error saying why it did not run, so the transcript stays well formed. */
  closeUnanswered(reason: string): void {
    for (const call of this.unanswered()) this.addTool(call.id, `Error: not run: ${reason}`);
  }

  /** The request layout: `[system, user, assistant, tool, ...]`. */
  request(system: string): ChatMessage[] {
    return [{ role: "system", content: system }, ...this.messages];
  }

  get length(): number {
    return this.messages.length;
  }
}

/** A tool result as the model reads it: the JSON result, or `Error: ...`. */
export function toolContent(outcome: ToolOutcome): string {
  if (!outcome.ok) return `Error: ${outcome.error ?? "the tool failed"}`;
  if (typeof outcome.result === "string") return outcome.result;
  return JSON.stringify(outcome.result ?? null);
}
