/**
 * The scripted model: deterministic, offline replies read from a YAML script,
 * behind the same ChatClient interface as the `openai` client. Replies can
 * quote earlier tool results with `{{result:CALL_ID.path}}` placeholders, so
 * a demo's answer shows what the tools really computed.
 */
import { RuntimeError } from "../errors.js";
import { sleep } from "../retry.js";
import type { ScriptedModelConfig } from "../config/types.js";
import type { Usage } from "../events/types.js";
import { loadScript, type LoadedScript, type ScriptReply } from "./script-format.js";
import type { ChatClient, ChatMessage, ChatRequest, ChatResponse, ToolCallRequest } from "./types.js";

/** Scripted model options; `stream` makes replies arrive through `onDelta` in pieces. */
export type ScriptedClientConfig = ScriptedModelConfig;

const DELTA_SIZE = 16;

/** Creates a scripted ChatClient; the script is read and validated now, so a broken one fails early. */
export function createScriptedChatClient(config: ScriptedClientConfig): ChatClient {
  return scriptedClientFrom(loadScript(config.script), config);
}

/** A scripted ChatClient over an already loaded script. Consumption is per client. */
export function scriptedClientFrom(script: LoadedScript, config: Pick<ScriptedClientConfig, "model" | "stream">): ChatClient {
  const consumed = new Set<number>();
  let generatedIds = 0;

  return {
    model: config.model,
    replayed(request: ChatRequest): void {
      const index = pick(script, consumed, request);
      if (index !== undefined) consumed.add(index);
    },
    async chat(request: ChatRequest): Promise<ChatResponse> {
      if (request.signal?.aborted) throw aborted(config.model);
      // Chosen and marked before any await: concurrent agents never share a reply.
      const index = pick(script, consumed, request);
      if (index === undefined) {
        throw new RuntimeError("MODEL_UNAVAILABLE", `scripted model: no reply left for agent ${request.agent_id ?? "(none)"} (script ${script.file})`);
      }
      consumed.add(index);
      const reply = script.replies[index] as ScriptReply;
      if (reply.delay_ms) await sleep(reply.delay_ms, request.signal);
      if (request.signal?.aborted) throw aborted(config.model);

      const results = collectResults(request.messages);
      const content = reply.content == null ? null : fillContent(reply.content, results);
      const toolCalls: ToolCallRequest[] = (reply.tool_calls ?? []).map((call) => ({
        id: call.id ?? `call_s${++generatedIds}`,
        name: call.name,
        arguments: typeof call.arguments === "string" ? fill(call.arguments, results) : JSON.stringify(fillDeep(call.arguments, results)),
      }));
      if (config.stream && content && request.onDelta) {
        for (let i = 0; i < content.length; i += DELTA_SIZE) request.onDelta(content.slice(i, i + DELTA_SIZE));
      }
      return {
        content,
        tool_calls: toolCalls,
        usage: usageOf(reply, request.messages, content, toolCalls),
        finish_reason: toolCalls.length > 0 ? "tool_calls" : "stop",
      };
    },
  };
}

function pick(script: LoadedScript, consumed: Set<number>, request: ChatRequest): number | undefined {
  const lastUser = [...request.messages].reverse().find((m) => m.role === "user")?.content ?? "";
  const index = script.replies.findIndex((reply, i) => {
    if (consumed.has(i)) return false;
    if (reply.agent !== undefined && reply.agent !== request.agent_id) return false;
    const pattern = script.patterns[i];
    return pattern === undefined || pattern.test(lastUser);
  });
  return index === -1 ? undefined : index;
}

const PLACEHOLDER = /\{\{\s*result:([^.\s}]+)((?:\.[^.\s}]+)*)\s*\}\}/g;
const PLACEHOLDER_TEST = /\{\{\s*result:/;
const WHOLE_PLACEHOLDER = /^\{\{\s*result:([^.\s}]+)((?:\.[^.\s}]+)*)\s*\}\}$/;

/** A tool's outcome as the placeholders see it: `{ok, result}` or `{ok, error}`, plus whatever else was reported. */
type Outcome = Record<string, unknown> & { ok: boolean };

/**
 * Tool outcomes visible in the request, by call id: `tool` messages, and the
 * react agent's assistant messages whose JSON content carries `tool_results`.
 * Later entries win.
 */
function collectResults(messages: ChatMessage[]): Map<string, Outcome> {
  const results = new Map<string, Outcome>();
  for (const message of messages) {
    if (message.role === "tool") {
      results.set(message.tool_call_id, asOutcome(parseMaybe(message.content)));
    } else if (message.role === "assistant" && message.content) {
      const parsed = parseMaybe(message.content);
      const list = isRecord(parsed) ? parsed["tool_results"] : undefined;
      if (!Array.isArray(list)) continue;
      for (const entry of list) {
        if (isRecord(entry) && typeof entry["call_id"] === "string") results.set(entry["call_id"], asOutcome(entry));
      }
    }
  }
  return results;
}

/** A tool message may hold an outcome envelope or the bare result. */
function asOutcome(value: unknown): Outcome {
  return isRecord(value) && typeof value["ok"] === "boolean" ? (value as Outcome) : { ok: true, result: value };
}

/**
 * `ID` alone is the tool's result (or its error text); `ID.a.b` reads into the
 * result, else into the outcome itself (`ID.ok`, `ID.error`, `ID.result`).
 */
function lookup(results: Map<string, Outcome>, callId: string, path: string): { found: boolean; value: unknown } {
  const outcome = results.get(callId);
  if (outcome === undefined) return { found: false, value: undefined };
  const keys = path.split(".").filter(Boolean);
  if (keys.length === 0) return { found: true, value: "result" in outcome ? outcome["result"] : outcome["error"] };
  const inResult = walk(outcome["result"], keys);
  return inResult.found ? inResult : walk(outcome, keys);
}

function walk(start: unknown, keys: string[]): { found: boolean; value: unknown } {
  let value = start;
  for (const key of keys) {
    if (!isRecord(value) && !Array.isArray(value)) return { found: false, value: undefined };
    if (!Object.hasOwn(value, key)) return { found: false, value: undefined };
    value = (value as Record<string, unknown>)[key];
  }
  return { found: true, value };
}

/** A plain regex replace, never a template engine: model text is never compiled. */
function fill(text: string, results: Map<string, Outcome>): string {
  return text.replace(PLACEHOLDER, (_all, callId: string, path: string) => {
    const { found, value } = lookup(results, callId, path);
    if (!found) return `<missing result ${callId}${path}>`;
    return typeof value === "string" ? value : JSON.stringify(value);
  });
}

/**
 * JSON content is filled value by value, so a result holding quotes or
 * newlines cannot break the JSON the agent will parse.
 */
function fillContent(content: string, results: Map<string, Outcome>): string {
  if (!PLACEHOLDER_TEST.test(content)) return content;
  const parsed = parseMaybe(content);
  if (parsed === null || typeof parsed !== "object") return fill(content, results);
  return JSON.stringify(mapStrings(parsed, (text) => fill(text, results)));
}

function mapStrings(value: unknown, f: (text: string) => string): unknown {
  if (typeof value === "string") return f(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f));
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mapStrings(v, f)]));
  return value;
}

/** In object arguments a string that is exactly one placeholder takes the result's own type. */
function fillDeep(value: unknown, results: Map<string, Outcome>): unknown {
  if (typeof value === "string") {
    const whole = WHOLE_PLACEHOLDER.exec(value);
    if (whole) {
      const { found, value: v } = lookup(results, whole[1] ?? "", whole[2] ?? "");
      return found ? v : `<missing result ${whole[1]}${whole[2]}>`;
    }
    return fill(value, results);
  }
  if (Array.isArray(value)) return value.map((v) => fillDeep(v, results));
  if (isRecord(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillDeep(v, results)]));
  return value;
}

function usageOf(reply: ScriptReply, messages: ChatMessage[], content: string | null, calls: ToolCallRequest[]): Usage {
  const completionChars = (content ?? "").length + calls.reduce((n, c) => n + c.name.length + c.arguments.length, 0);
  const prompt_tokens = reply.usage?.prompt_tokens ?? Math.ceil(JSON.stringify(messages).length / 4);
  const completion_tokens = reply.usage?.completion_tokens ?? Math.ceil(completionChars / 4);
  return { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens };
}

function parseMaybe(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

function aborted(model: string): RuntimeError {
  return new RuntimeError("ABORTED", `model ${model}: request aborted`);
}
