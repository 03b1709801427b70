import type { JsonSchema } from "../../config/types.js";
import type { ResponseFormat, ToolCallRequest } from "../../models/types.js";
import { Allow, parse as parsePartialJson } from "partial-json";
import { parseJsonTolerant } from "../../parse/json.js";
import { CUT_OFF_ERROR, isCutOff } from "../cut-off.js";

/** The action types of docs/design/react-design.md. */
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
 * with no tool calls and no attempt at JSON is the answer. A reply cut off
 * at the token limit is INVALID, whatever it holds.
 */
export function parseReply(content: string | null, toolCalls: ToolCallRequest[], finish_reason?: string): ReactAction {
  if (finish_reason !== undefined && isCutOff({ finish_reason })) return invalid(CUT_OFF_ERROR);
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
    return invalid(`action.result.action_type must be one of CALL_TOOL, PLAN, REMEND, ANSWER (got ${JSON.stringify(type ?? null)})`, observe, thought);
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
      return invalid("action_type CALL_TOOL needs native tool_calls: call the tools through the tools API, not in the text", observe, thought);
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

/** Find the JSON in a reply: the whole text, a fenced block, or the object from the first brace. */
export function extractJson(text: string): Extracted {
  // A reply that opens with prose is not parsed whole, and only the first `{` is
  // tried: the error sent back must be about the object the model attempted, not
  // about its prose or an object nested in a truncated reply.
  const parsed = parseJsonTolerant(text, { whole: "object", maxSpanStarts: 1 });
  if (parsed.ok) return { attempted: true, value: parsed.value };
  // Whether the reply tries to be JSON is the protocol's call, not the parser's:
  // prose with a stray brace in it is an answer.
  const attempted = text.startsWith("{") || /```[\s\S]*?```/.test(text) || /"action"\s*:/.test(text);
  return parsed.error === undefined ? { attempted } : { attempted, error: parsed.error };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function str(v: unknown): string {
  if (v === undefined || v === null) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}

/**
 * The protocol's ANSWER reply as a response format whose `output.answer`
 * must match `answer` (a planner's Plan, a replanner's Action): asked for
 * when the caller expects that schema and the agent has no tools to call
 * (docs/model-servers.md#structured-output). The answer schema's `$defs` move to
 * the root, where its `$ref`s point.
 */
export function answerFormat(answer: JsonSchema): ResponseFormat {
  const { $defs, $schema: _s, $id: _i, ...inner } = answer;
  const object = (properties: Record<string, unknown>) => ({ type: "object", properties, required: Object.keys(properties), additionalProperties: false });
  const schema: JsonSchema = {
    ...object({
      observe: { type: "string" },
      thought: { type: "string" },
      action: object({ result: object({ action_type: { type: "string", enum: ["ANSWER"] }, output: object({ answer: inner }) }) }),
    }),
    ...($defs !== undefined ? { $defs } : {}),
  };
  return { name: "react_answer", schema };
}

/**
 * The answer a reply holds so far while it is streamed (`KindModule.partialAnswer`):
 * the text of `output.answer` once the reply, read as far as it goes,
 * says ANSWER. Only a reply that opens with the protocol's JSON object
 * (or its fence) is read: prose may still turn out to hold tool calls or a
 * JSON reply, so it is known to be the answer only when it is whole.
 */
export function partialAnswer(reply: string): string | undefined {
  const text = reply.trimStart().replace(/^```(?:json)?\s*/, "");
  if (!text.startsWith("{")) return undefined;
  let value: unknown;
  try {
    value = parsePartialJson(text, Allow.STR | Allow.OBJ | Allow.ARR);
  } catch {
    return undefined;
  }
  const action = isRecord(value) && isRecord(value.action) ? value.action : undefined;
  const result = action && isRecord(action.result) ? action.result : action;
  if (result?.action_type !== "ANSWER" || !isRecord(result.output)) return undefined;
  const answer = result.output.answer;
  return typeof answer === "string" ? answer : undefined;
}
