import type { ToolCallRequest } from "../../models/types.js";

/** The action types of seed 004. */
export type ActionType = "CALL_TOOL" | "PLAN" | "REMEND" | "ANSWER";

/** One model reply, understood. `INVALID` replies go back to the model to repair (REMEND). */
export type ReactAction =
  | { action_type: "CALL_TOOL"; observe: string; thought: string; calls: ToolCallRequest[] }
  | { action_type: "PLAN" | "REMEND"; observe: string; thought: string; plan: string }
  | { action_type: "ANSWER"; observe: string; thought: string; answer: string }
  | { action_type: "INVALID"; observe: string; thought: string; error: string };

const ACTION_TYPES = new Set<string>(["CALL_TOOL", "PLAN", "REMEND", "ANSWER"]);

/**
 * Parse a reply strictly, tolerating the common slips: a fenced ```json
 * block, text around the JSON, an `action` without its `result` wrapper.
 * A reply with tool calls is CALL_TOOL whatever its content says; a reply
 * with no tool calls and no attempt at JSON is the answer.
 */
export function parseReply(content: string | null, toolCalls: ToolCallRequest[]): ReactAction {
  const text = (content ?? "").trim();
  const json = extractJson(text);
  const obj = json.value !== undefined && isRecord(json.value) ? json.value : undefined;
  const observe = str(obj?.observe);
  const thought = str(obj?.thought);
  if (toolCalls.length > 0) return { action_type: "CALL_TOOL", observe, thought, calls: toolCalls };
  if (text === "") return invalid("the reply was empty: answer with the JSON object of the protocol");
  if (!json.attempted) return { action_type: "ANSWER", observe: "", thought: "", answer: text };
  if (!obj) return invalid(`the reply is not valid JSON (${json.error ?? "not an object"})`);

  const action = isRecord(obj.action) ? obj.action : undefined;
  const result = action && isRecord(action.result) ? action.result : action;
  const type = result?.action_type;
  if (typeof type !== "string" || !ACTION_TYPES.has(type)) {
    return invalid(
      `action.result.action_type must be one of CALL_TOOL, PLAN, REMEND, ANSWER (got ${JSON.stringify(type ?? null)})`,
      observe,
      thought,
    );
  }
  const output = isRecord(result?.output) ? result.output : {};
  switch (type) {
    case "ANSWER":
      if (output.answer === undefined || output.answer === null) {
        return invalid("action_type ANSWER needs output.answer", observe, thought);
      }
      return { action_type: "ANSWER", observe, thought, answer: str(output.answer) };
    case "PLAN":
    case "REMEND": {
      const plan = str(output.plan);
      if (!plan) return invalid(`action_type ${type} needs output.plan (a numbered plan as text)`, observe, thought);
      return { action_type: type, observe, thought, plan };
    }
    default:
      return invalid(
        "action_type CALL_TOOL needs native tool_calls: call the tools through the tools API, not in the text",
        observe,
        thought,
      );
  }
}

function invalid(error: string, observe = "", thought = ""): ReactAction {
  return { action_type: "INVALID", observe, thought, error };
}

interface Extracted {
  /** Whether the text tries to be JSON at all. */
  attempted: boolean;
  value?: unknown;
  error?: string;
}

/** Find the JSON object in a reply: the whole text, a fenced block, or the outermost braces. */
export function extractJson(text: string): Extracted {
  const candidates: string[] = [];
  const fenced = /```(?:json|JSON)?\s*\n?([\s\S]*?)```/.exec(text);
  if (text.startsWith("{")) candidates.push(text);
  if (fenced?.[1]) candidates.push(fenced[1].trim());
  const first = text.indexOf("{");
  const last = text.lastIndexOf("}");
  if (first >= 0 && last > first) candidates.push(text.slice(first, last + 1));
  const attempted = text.startsWith("{") || fenced !== null || /"action"\s*:/.test(text);
  let error: string | undefined;
  for (const candidate of candidates) {
    try {
      return { attempted: true, value: JSON.parse(candidate) };
    } catch (err) {
      error ??= err instanceof Error ? err.message : String(err);
    }
  }
  return error === undefined ? { attempted } : { attempted, error };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  if (v === undefined || v === null) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}
