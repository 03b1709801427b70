/**
 * A case's expectations held against what its run showed. Each difference
 * names exactly what differed (`tool_calls[1].arguments.expression`), what was
 * expected and what the run gave, so a failing case reads without a debugger.
 */
import { isDeepStrictEqual } from "node:util";
import type { CallMatcher, CallsExpectation, Expectations, TextMatcher, ValueMatcher } from "./test-file.js";
import type { Observed, ObservedCall } from "./observe.js";

export interface Difference {
  /** What differed: `answer`, `tool_calls[1].arguments.expression`, `budget.max_tokens`, ... */
  what: string;
  expected: string;
  actual: string;
}

/** Every difference between the expectations and the run; none when the case passes. */
export function compare(expect: Expectations, seen: Observed): Difference[] {
  const out: Difference[] = [];
  if (seen.result_type !== expect.result) {
    const why =
      seen.result_type === "error" ? ` (${oneLine(seen.error ?? "no error text")})` : seen.result_type === "answer" ? ` (${quote(seen.answer ?? "")})` : "";
    out.push({ what: "result", expected: expect.result, actual: `${seen.result_type}${why}` });
  }
  if (expect.answer) out.push(...compareText("answer", expect.answer, seen.answer));
  if (expect.error) out.push(...compareText("error", expect.error, seen.error));
  if (expect.tool_calls) out.push(...compareCalls(expect.tool_calls, seen.tool_calls));
  if (expect.todos) out.push(...compareTodos(expect.todos, seen));
  if (expect.plan) out.push(...comparePlan(expect.plan, seen));
  const budget = expect.budget;
  if (budget?.max_model_calls !== undefined && seen.model_calls > budget.max_model_calls) {
    out.push({ what: "budget.max_model_calls", expected: `at most ${budget.max_model_calls} model calls`, actual: `${seen.model_calls}` });
  }
  if (budget?.max_tool_calls !== undefined && seen.tool_calls.length > budget.max_tool_calls) {
    out.push({ what: "budget.max_tool_calls", expected: `at most ${budget.max_tool_calls} tool calls`, actual: `${seen.tool_calls.length}` });
  }
  if (budget?.max_tokens !== undefined && seen.tokens > budget.max_tokens) {
    out.push({ what: "budget.max_tokens", expected: `at most ${budget.max_tokens} tokens`, actual: `${seen.tokens}` });
  }
  return out;
}

function compareText(what: string, matcher: TextMatcher, actual: string | undefined): Difference[] {
  if (actual === undefined) return [{ what, expected: describeText(matcher), actual: `no ${what}` }];
  const out: Difference[] = [];
  if (matcher.equals !== undefined && actual.trim() !== matcher.equals.trim()) {
    out.push({ what, expected: `to equal ${quote(matcher.equals)}`, actual: quote(actual) });
  }
  const parts = matcher.contains === undefined ? [] : Array.isArray(matcher.contains) ? matcher.contains : [matcher.contains];
  for (const part of parts) {
    if (!actual.includes(part)) out.push({ what, expected: `to contain ${quote(part)}`, actual: quote(actual) });
  }
  if (matcher.matches !== undefined && !new RegExp(matcher.matches).test(actual)) {
    out.push({ what, expected: `to match /${matcher.matches}/`, actual: quote(actual) });
  }
  return out;
}

function describeText(matcher: TextMatcher): string {
  const parts: string[] = [];
  if (matcher.equals !== undefined) parts.push(`to equal ${quote(matcher.equals)}`);
  for (const part of [matcher.contains ?? []].flat()) parts.push(`to contain ${quote(part)}`);
  if (matcher.matches !== undefined) parts.push(`to match /${matcher.matches}/`);
  return parts.join(" and ");
}

function compareCalls(expected: CallsExpectation, calls: ObservedCall[]): Difference[] {
  const list = calls.map(callName).join(", ") || "none";
  if (expected.order === "in_order" && expected.exact) {
    const out: Difference[] = [];
    expected.calls.forEach((matcher, i) => {
      const call = calls[i];
      if (call === undefined) out.push({ what: `tool_calls[${i}]`, expected: describeCall(matcher), actual: "no such call" });
      else out.push(...callDifferences(matcher, call, `tool_calls[${i}]`));
    });
    if (calls.length !== expected.calls.length) {
      out.push({ what: "tool_calls", expected: `${expected.calls.length} call${expected.calls.length === 1 ? "" : "s"}`, actual: `${calls.length}: ${list}` });
    }
    return out;
  }
  if (expected.order === "in_order") {
    // A subsequence: each expected call matched by a later call than the one before.
    let from = 0;
    for (const [i, matcher] of expected.calls.entries()) {
      const at = calls.findIndex((call, j) => j >= from && callDifferences(matcher, call, "").length === 0);
      if (at === -1) {
        const after = from === 0 ? "" : ` after tool_calls[${from - 1}]`;
        return [{ what: `tool_calls (expected #${i})`, expected: `${describeCall(matcher)}${after}`, actual: `not found among: ${list}` }];
      }
      from = at + 1;
    }
    return [];
  }
  // Any order: each expected call takes a different observed one.
  const used = new Set<number>();
  const out: Difference[] = [];
  for (const [i, matcher] of expected.calls.entries()) {
    const at = calls.findIndex((call, j) => !used.has(j) && callDifferences(matcher, call, "").length === 0);
    if (at === -1) {
      // The nearest miss says which argument differed.
      const near = calls.findIndex((call, j) => !used.has(j) && call.name === matcher.name);
      const hint =
        near === -1 ? `not found among: ${list}` : `closest, tool_calls[${near}]: ${callDifferences(matcher, calls[near]!, "").map(format).join("; ")}`;
      out.push({ what: `tool_calls (expected #${i}, any order)`, expected: describeCall(matcher), actual: hint });
    } else used.add(at);
  }
  if (expected.exact && out.length === 0 && calls.length !== expected.calls.length) {
    const extra = calls
      .filter((_, j) => !used.has(j))
      .map(callName)
      .join(", ");
    out.push({ what: "tool_calls", expected: `${expected.calls.length} calls, any order`, actual: `${calls.length}, also: ${extra}` });
  }
  return out;
}

function callDifferences(matcher: CallMatcher, call: ObservedCall, at: string): Difference[] {
  const where = (suffix: string) => (at ? `${at}${suffix}` : suffix.replace(/^\./, ""));
  if (call.name !== matcher.name) return [{ what: where(".name"), expected: matcher.name, actual: call.name }];
  if (matcher.agent !== undefined && call.agent !== matcher.agent) return [{ what: where(".agent"), expected: matcher.agent, actual: call.agent }];
  const args = call.arguments !== null && typeof call.arguments === "object" ? (call.arguments as Record<string, unknown>) : {};
  const out: Difference[] = [];
  for (const [name, value] of Object.entries(matcher.arguments)) {
    const what = where(`.arguments.${name}`);
    if (!Object.hasOwn(args, name)) {
      out.push({ what, expected: describeValue(value), actual: "not given" });
      continue;
    }
    const actual = args[name];
    if (!valueMatches(value, actual)) out.push({ what, expected: describeValue(value), actual: show(actual) });
  }
  return out;
}

function valueMatches(matcher: ValueMatcher, actual: unknown): boolean {
  if ("equals" in matcher) return isDeepStrictEqual(actual, matcher.equals);
  if ("matches" in matcher) return new RegExp(matcher.matches).test(typeof actual === "string" ? actual : JSON.stringify(actual));
  const part = matcher.contains;
  if (typeof actual === "string") return actual.includes(typeof part === "string" ? part : JSON.stringify(part));
  if (Array.isArray(actual)) return actual.some((item) => isDeepStrictEqual(item, part));
  return false;
}

function compareTodos(expected: NonNullable<Expectations["todos"]>, seen: Observed): Difference[] {
  const todos = seen.todos;
  if (todos === undefined) return [{ what: "todos", expected: "a todo list", actual: "the run wrote none" }];
  const out: Difference[] = [];
  const summary = todos.map((t) => `${t.index}:${t.status}`).join(", ");
  if (expected.count !== undefined && todos.length !== expected.count)
    out.push({ what: "todos.count", expected: `${expected.count}`, actual: `${todos.length}` });
  if (expected.all !== undefined) {
    const other = todos.filter((t) => t.status !== expected.all);
    if (other.length > 0) out.push({ what: "todos.all", expected: `every item ${expected.all}`, actual: summary });
  }
  const completed = todos.filter((t) => t.status === "completed").length;
  if (expected.completed !== undefined && completed !== expected.completed) {
    out.push({ what: "todos.completed", expected: `${expected.completed} completed`, actual: `${completed} (${summary})` });
  }
  return out;
}

function comparePlan(expected: NonNullable<Expectations["plan"]>, seen: Observed): Difference[] {
  const out: Difference[] = [];
  const plan = seen.plan;
  if (expected.steps !== undefined && plan.steps?.length !== expected.steps) {
    out.push({ what: "plan.steps", expected: `${expected.steps}`, actual: plan.steps === undefined ? "no plan" : `${plan.steps.length}` });
  }
  if (expected.finished !== undefined && plan.finished !== expected.finished) {
    out.push({ what: "plan.finished", expected: `${expected.finished}`, actual: plan.finished === undefined ? "not reported" : `${plan.finished}` });
  }
  if (expected.status !== undefined && plan.status !== expected.status) {
    out.push({ what: "plan.status", expected: expected.status, actual: plan.status ?? "no Plan Tool plan" });
  }
  for (const [task, status] of Object.entries(expected.tasks ?? {})) {
    const actual = plan.tasks[task];
    if (actual !== status) out.push({ what: `plan.tasks.${task}`, expected: status, actual: actual ?? "no such task" });
  }
  return out;
}

/** `what: expected X, got Y`. */
export function format(d: Difference): string {
  return `${d.what}: expected ${d.expected}, got ${d.actual}`;
}

function callName(call: ObservedCall): string {
  return call.name;
}

function describeCall(matcher: CallMatcher): string {
  const args = Object.entries(matcher.arguments).map(([name, value]) => `${name} ${describeValue(value)}`);
  return `${matcher.name}${matcher.agent ? ` (by ${matcher.agent})` : ""}${args.length ? ` with ${args.join(", ")}` : ""}`;
}

function describeValue(matcher: ValueMatcher): string {
  if ("equals" in matcher) return `= ${show(matcher.equals)}`;
  if ("matches" in matcher) return `matching /${matcher.matches}/`;
  return `containing ${show(matcher.contains)}`;
}

function show(value: unknown): string {
  return typeof value === "string" ? quote(value) : (JSON.stringify(value) ?? "undefined");
}

function oneLine(text: string): string {
  const line = text.replace(/\s*\n\s*/g, " ");
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}

/** A text as a report shows it: JSON-quoted, cut at 200 characters. */
function quote(text: string): string {
  return JSON.stringify(text.length > 200 ? `${text.slice(0, 200)}…` : text);
}
