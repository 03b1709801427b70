/**
 * The masked copy of a step's events (docs/guardrails.md#events-carry-the-masked-text):
 * what a `deny` or `pii` guardrail on `output`, `tool_input` or
 * `tool_output` finds is masked in every event of the step that carries
 * that text, whatever the guardrail's action, so the trace, the page, `GET
 * /v1/runs/:id` and every stream show what the caller was given and never
 * the text it was kept from:
 *
 * - `output`: the model's reply (`llm.delta`, and `llm.response`'s content,
 *   thought, observe, reasoning, error), `answer.verified`, plans, and
 *   `agent.finished`;
 * - `tool_input` (of the tools it names): the arguments in `llm.response`'s
 *   tool calls, `tool.started`, `approval.requested` and `tool.finished`;
 * - `tool_output`: `tool.finished`'s result and error, `tool.progress`.
 *
 * `llm.delta`: a match may straddle two deltas, so the last HOLD visible
 * characters of a reply are held back until more text comes or the reply
 * ends (`llm.response` or `llm.error` of the same call); the held text is
 * matched with the HOLD characters already given before it, so a match that
 * began there is masked from where the held text starts.
 */
import type { Guardrail } from "../config/types.js";
import type { RunEventBody } from "../events/types.js";
import { isSpanCheck, maskAll, type SpanCheck, findMatches, mask, type Span } from "./matches.js";

/**
 * Visible characters (no marks, no invisible ones) held back: the reach of
 * the longest match looked for whole. An IBAN with its spaces is at most 64,
 * a card 37, a phone 22, an e-mail address 254; a `deny` match longer than
 * this is masked from where the held text starts.
 */
export const HOLD = 256;
/** Visible characters given at least at once, so a reply is not matched again at each delta. */
const CHUNK = 64;

const INVISIBLE = /[\p{M}\p{Default_Ignorable_Code_Point}\p{Cf}]/u;

interface ToolCheck {
  tools: readonly string[] | undefined;
  check: SpanCheck;
}

/** The text of one reply not given yet, and the text given just before it. */
interface Held {
  pending: string;
  given: string;
}

export class EventMask {
  private readonly held = new Map<string, Held>();

  private constructor(
    private readonly output: readonly SpanCheck[],
    private readonly toolInput: readonly ToolCheck[],
    private readonly toolOutput: readonly ToolCheck[],
  ) {}

  /** The mask of a step with these guardrails; none when no deny or pii guardrail covers its events. */
  static of(guardrails: readonly Guardrail[] | undefined): EventMask | undefined {
    const spanning = (guardrails ?? []).filter((g) => isSpanCheck(g.check));
    if (spanning.length === 0) return undefined;
    const on = (what: Guardrail["on"]) => spanning.filter((g) => g.on === what).map((g) => ({ tools: g.tools, check: g.check as SpanCheck }));
    const output = on("output").map((c) => c.check);
    const toolInput = on("tool_input");
    const toolOutput = on("tool_output");
    if (output.length + toolInput.length + toolOutput.length === 0) return undefined;
    return new EventMask(output, toolInput, toolOutput);
  }

  /** The events to emit for `body` of the call `key` (its trace id): masked, none while a delta is held, held deltas before a reply's end. */
  apply(body: RunEventBody, key = ""): RunEventBody[] {
    switch (body.type) {
      case "llm.delta": {
        if (this.output.length === 0) return [body];
        const held = this.held.get(key) ?? { pending: "", given: "" };
        this.held.set(key, held);
        held.pending += body.text;
        const text = this.release(held, false);
        return text ? [{ type: "llm.delta", text }] : [];
      }
      case "llm.response":
      case "llm.error":
        return [...this.flush(key), this.masked(body)];
      default:
        return [this.masked(body)];
    }
  }

  private masked(body: RunEventBody): RunEventBody {
    const out = (text: string | undefined) => (text === undefined ? undefined : maskAll(text, this.output));
    switch (body.type) {
      case "llm.response": {
        const masked = { ...body };
        for (const field of ["content", "thought", "observe", "reasoning", "error"] as const) {
          if (masked[field] !== undefined) masked[field] = out(masked[field]);
        }
        if (body.tool_calls) {
          masked.tool_calls = body.tool_calls.map((c) => ({ ...c, arguments: maskAll(c.arguments, checksFor(this.toolInput, c.name)) }));
        }
        return masked;
      }
      case "llm.error":
        return { ...body, error: maskAll(body.error, this.output) };
      case "agent.finished":
        return body.answer === undefined ? body : { ...body, answer: maskAll(body.answer, this.output) };
      case "answer.verified":
        return { ...body, answer: maskAll(body.answer, this.output) };
      case "plan.created":
      case "plan.updated":
        return { ...body, steps: body.steps.map((s) => maskAll(s, this.output)) };
      case "tool.started":
      case "approval.requested":
        return { ...body, arguments: maskValue(body.arguments, checksFor(this.toolInput, body.tool)) };
      case "tool.progress":
        return body.message === undefined ? body : { ...body, message: maskAll(body.message, checksFor(this.toolOutput, body.tool)) };
      case "tool.finished": {
        const results = checksFor(this.toolOutput, body.tool);
        return {
          ...body,
          arguments: maskValue(body.arguments, checksFor(this.toolInput, body.tool)),
          ...(body.result !== undefined ? { result: maskValue(body.result, results) } : {}),
          ...(body.error !== undefined ? { error: maskAll(body.error, results) } : {}),
        };
      }
      default:
        return body;
    }
  }

  /** The held text of a call given, masked, as the reply ends. */
  private flush(key: string): RunEventBody[] {
    const held = this.held.get(key);
    if (!held) return [];
    this.held.delete(key);
    const text = this.release(held, true);
    return text ? [{ type: "llm.delta", text }] : [];
  }

  /**
   * The masked text that may be given now: all of it at the end, else all
   * but the last HOLD visible characters, never cutting through a match.
   */
  private release(held: Held, end: boolean): string {
    let cut = end ? held.pending.length : cutBefore(held.pending, HOLD);
    if (!end && visibleLength(held.pending.slice(0, cut)) < CHUNK) return "";
    const context = held.given;
    const spans = this.output.flatMap((check) => findMatches(check, context + held.pending)?.spans ?? []);
    // Spans in the held text's indices: one that began in the given text is masked from the start.
    const own = spans.map(([s, e]): Span => [Math.max(0, s - context.length), e - context.length]).filter(([, e]) => e > 0);
    for (const [s, e] of own) if (s < cut && e > cut) cut = s;
    const released = mask(
      held.pending.slice(0, cut),
      own.filter(([, e]) => e <= cut),
    );
    const given = context + held.pending.slice(0, cut);
    held.given = given.slice(cutBefore(given, HOLD));
    held.pending = held.pending.slice(cut);
    return released;
  }
}

/** The checks of `checks` that cover `tool` (one array a tool, so `maskAll` knows them again). */
const covering = new WeakMap<readonly ToolCheck[], Map<string, SpanCheck[]>>();
function checksFor(checks: readonly ToolCheck[], tool: string): SpanCheck[] {
  let byTool = covering.get(checks);
  if (!byTool) covering.set(checks, (byTool = new Map()));
  let found = byTool.get(tool);
  if (!found) byTool.set(tool, (found = checks.filter((c) => c.tools === undefined || c.tools.includes(tool)).map((c) => c.check)));
  return found;
}

/** A value (a string as it is, anything else as its JSON) with what the checks find masked. */
function maskValue(value: unknown, checks: readonly SpanCheck[]): unknown {
  if (checks.length === 0 || value === undefined) return value;
  const text = typeof value === "string" ? value : JSON.stringify(value);
  const masked = maskAll(text, checks);
  if (masked === text) return value;
  if (typeof value === "string") return masked;
  try {
    return JSON.parse(masked) as unknown;
  } catch {
    return masked;
  }
}

/** Where the last `count` visible characters of `text` begin (0 when it has fewer). */
function cutBefore(text: string, count: number): number {
  let seen = 0;
  let at = text.length;
  while (at > 0 && seen < count) {
    const code = text.charCodeAt(at - 1);
    const width = code >= 0xdc00 && code <= 0xdfff && at > 1 ? 2 : 1;
    if (!INVISIBLE.test(text.slice(at - width, at))) seen++;
    at -= width;
  }
  return at;
}

function visibleLength(text: string): number {
  let n = 0;
  for (const char of text) if (!INVISIBLE.test(char)) n++;
  return n;
}
