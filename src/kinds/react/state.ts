import type { ToolOutcome } from "../../tools/types.js";
import type { ReactAction } from "./protocol.js";

/** What one finished recursion left behind, as the model sees it in its assistant message. */
export interface RecursionRecord {
  recursion: number;
  action_type: ReactAction["action_type"];
  observe?: string;
  thought?: string;
  plan?: string;
  tool_results?: ToolOutcome[];
  error?: string;
}

/** A finished recursion's content, made once: every later request repeats it, unchanged. */
const contentOf = new WeakMap<RecursionRecord, string>();

/**
 * Content of the assistant message `[2..n]` for one recursion: its action and
 * its results or error. A record does not change once its recursion is over,
 * so its text is serialised once, not once per later request.
 */
export function recordContent(r: RecursionRecord): string {
  let text = contentOf.get(r);
  if (text === undefined) {
    text = serialise(r);
    contentOf.set(r, text);
  }
  return text;
}

function serialise(r: RecursionRecord): string {
  const out: Record<string, unknown> = { recursion: r.recursion, action_type: r.action_type };
  if (r.observe) out.observe = r.observe;
  if (r.thought) out.thought = r.thought;
  if (r.plan) out.plan = r.plan;
  if (r.tool_results) {
    out.tool_results = r.tool_results.map((o) => ({
      call_id: o.call_id,
      tool: o.tool,
      arguments: o.arguments,
      ok: o.ok,
      ...(o.ok ? { result: o.result } : { error: o.error }),
    }));
  }
  if (r.error) out.error = r.error;
  return JSON.stringify(out);
}

export interface CurrentState {
  iteration: number;
  max_iteration: number;
  plan?: string;
  last?: RecursionRecord;
}

/** `{{current_state}}`: the live snapshot rendered into the one system prompt each recursion. */
export function renderCurrentState(s: CurrentState): string {
  const lines = [`Recursion ${s.iteration} of at most ${s.max_iteration} (${s.max_iteration - s.iteration} left after this one).`];
  lines.push(s.plan ? `Plan:\n${s.plan.trim()}` : "Plan: none yet.");
  const last = s.last;
  if (!last) {
    lines.push("Last result: none, this is the first recursion.");
  } else if (last.error) {
    lines.push(`Last recursion (${last.recursion}) failed, repair it (REMEND): ${last.error}`);
  } else if (last.tool_results) {
    const failed = last.tool_results.filter((o) => !o.ok);
    lines.push(
      `Last recursion (${last.recursion}) called ${last.tool_results.length} tool(s)` +
        (failed.length ? `; ${failed.length} failed: ${failed.map((o) => `${o.tool}: ${o.error}`).join("; ")}` : ", all succeeded") +
        ". Their results are in your last assistant message.",
    );
  } else if (last.plan) {
    lines.push(`Last recursion (${last.recursion}) made the plan above; carry it out.`);
  }
  return lines.join("\n");
}
