/**
 * Small text helpers shared by the views of events (the terminal sink and the
 * trace tree), so both show a duration, a todo mark or a tool call alike.
 */
import type { BudgetStatement, TodoItem, TodoStatus, Usage } from "./types.js";

/** `840ms`, `1.23s`, `2m05s`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "?";
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(2)}s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return `${minutes}m${String(seconds).padStart(2, "0")}s`;
}

/** Milliseconds between two ISO timestamps. */
export function msBetween(fromIso: string, toIso: string): number {
  return Date.parse(toIso) - Date.parse(fromIso);
}

/** `1,234 tokens (prompt 1,000, completion 234)`. */
export function formatUsage(usage: Usage): string {
  const n = (x: number) => x.toLocaleString("en-US");
  const unknown = usage.unknown ? `; usage unknown for ${unknownCalls(usage.unknown)}, so at least that` : "";
  const cached = usage.cached_tokens ? ` of which ${n(usage.cached_tokens)} cached` : "";
  const reasoning = usage.reasoning_tokens ? ` of which ${n(usage.reasoning_tokens)} reasoning` : "";
  return `${n(usage.total_tokens)} tokens (prompt ${n(usage.prompt_tokens)}${cached}, completion ${n(usage.completion_tokens)}${reasoning}${unknown})`;
}

/** Tokens used, short, saying when some calls reported no usage (the count is then a lower bound). */
export function tokens(usage: Usage): string {
  if (!usage.unknown) return `${usage.total_tokens} tok`;
  return usage.total_tokens > 0 ? `≥${usage.total_tokens} tok (usage unknown for ${unknownCalls(usage.unknown)})` : `tok unknown`;
}

function unknownCalls(n: number): string {
  return n === 1 ? "1 call" : `${n} calls`;
}

const TODO_MARKS: Record<TodoStatus, string> = {
  pending: "[ ]",
  in_progress: "[~]",
  completed: "[x]",
  failed: "[!]",
  blocked: "[!]",
  skipped: "[-]",
};

/** The checklist mark of a todo status: `[ ]`, `[~]`, `[x]`, `[!]` or `[-]`. */
/** Spend against a budget: `budget: tokens 1200/50000 · tool calls 2/2 (spent)`. */
export function formatBudget(statement: BudgetStatement): string {
  const names: Record<string, string> = {
    max_tokens: "tokens",
    max_model_calls: "model calls",
    max_tool_calls: "tool calls",
    max_seconds: "seconds",
    max_cost_usd: "USD",
  };
  const parts = Object.entries(statement).map(([key, v]) => `${names[key] ?? key} ${v.spent}/${v.limit}${v.spent >= v.limit ? " (spent)" : ""}`);
  return `budget: ${parts.join(" · ")}`;
}

export function todoMark(status: TodoStatus): string {
  return TODO_MARKS[status] ?? "[?]";
}

/** One checklist line: `[~] 2. Compute the area (blocked)`; failed and blocked say which. */
export function todoLine(item: TodoItem): string {
  const which = item.status === "failed" || item.status === "blocked" ? ` (${item.status})` : "";
  return `${todoMark(item.status)} ${item.index}. ${oneLine(item.content)}${which}`;
}

/** `2/4 completed`, counting skipped items as done. */
export function todoProgress(todos: readonly TodoItem[]): string {
  const done = todos.filter((t) => t.status === "completed" || t.status === "skipped").length;
  return `${done}/${todos.length} done`;
}

/** Collapse whitespace and newlines to single spaces. */
export function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** One line of at most `max` characters, with an ellipsis when cut. */
export function clip(text: string, max: number): string {
  const line = oneLine(text);
  return line.length <= max ? line : `${line.slice(0, Math.max(0, max - 1))}…`;
}

/** A value shown compactly: strings as they are, everything else as JSON. */
export function compact(value: unknown, max: number): string {
  if (value === undefined) return "";
  const text = typeof value === "string" ? value : safeJson(value);
  return clip(text, max);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** ANSI styles, or plain text when colour is off. */
export interface Paint {
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  cyan(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

/** A `Paint` that colours when `color` is true and leaves text alone otherwise. */
export function painter(color: boolean): Paint {
  const style = (open: number, close: number) => (text: string) => (color ? `\x1b[${open}m${text}\x1b[${close}m` : text);
  return {
    red: style(31, 39),
    green: style(32, 39),
    yellow: style(33, 39),
    cyan: style(36, 39),
    dim: style(2, 22),
    bold: style(1, 22),
  };
}
