/**
 * The live view drawn: a pure function of the view state, the window's size
 * and the time, giving lines that always fit (none wider than `width`, never
 * more than `height`). Finished agents collapse to one line, long trees and
 * checklists end in `… N more`, and the sections share the rows by priority:
 * the header, the running agents, the answer as it is written, the
 * checklist, the last thought.
 */
import cliTruncate from "cli-truncate";
import stringWidth from "string-width";
import { oneLine, painter, type Paint } from "../format.js";
import type { RunTree, StepNode } from "../projection.js";
import { agentRoots, checklistOf, noticeOf, shortState, type CheckMark, type LiveState } from "./state.js";

export interface RenderOptions {
  /** Columns: no line is wider. */
  width: number;
  /** Rows: no more lines than this. */
  height: number;
  /** Milliseconds since the epoch, for the running clocks. */
  now: number;
  /** ANSI colours. @default false */
  color?: boolean;
}

const MARKS: Record<CheckMark, string> = { done: "✓", active: "▶", pending: "○", failed: "✗", skipped: "–" };

/** `0.4s`, `12.0s`, `2m05s`. */
export function elapsed(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return "0.0s";
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes}m${String(Math.floor((ms % 60_000) / 1000)).padStart(2, "0")}s`;
}

/** The frame: at most `height` lines, none wider than `width` columns. */
export function renderView(view: LiveState, options: RenderOptions): string[] {
  const { width, height, now } = options;
  if (height <= 0 || width <= 0) return [];
  const p = painter(options.color ?? false);
  const fit = (text: string) => truncate(text.replace(/[\r\n\t]+/g, " "), width);

  const header = p.bold(fit(`● ${spendLine(view, now)}`));
  const tree = treeRows(view, now);
  const checklist = checklistOf(view);
  const run = view.run;
  const thought = run.thought ? `› ${run.thought.agent_id}: ${oneLine(run.thought.text)}` : undefined;
  const notice = noticeOf(run);
  // The answer while it is written: its last rows, the rows it fills at this width.
  const answer = view.answer !== "" && run.status === "running" ? tailRows(view.answer, Math.max(1, width - 2), ANSWER_ROWS) : [];

  // Rows by priority: the header, one for the tree, one for the answer, the thought, two for the checklist, the notice; then the rest.
  let rest = height - 1;
  const take = (want: number) => {
    const n = Math.max(0, Math.min(want, rest));
    rest -= n;
    return n;
  };
  let treeRowsN = take(Math.min(tree.length, 1));
  let answerN = take(Math.min(answer.length, 1));
  const thoughtN = take(thought ? 1 : 0);
  const checkWant = checklist ? checklist.items.length + 1 : 0;
  let checkN = take(Math.min(checkWant, 2));
  const noticeN = take(notice ? 1 : 0);
  answerN += take(answer.length - answerN);
  treeRowsN += take(Math.min(tree.length - treeRowsN, Math.ceil(rest / 2)));
  checkN += take(checkWant - checkN);
  treeRowsN += take(tree.length - treeRowsN);

  const lines = [header];
  for (const row of fitTree(tree, treeRowsN)) lines.push(paintRow(fit(row.text), row.tone, p));
  if (checklist && checkN > 0) {
    lines.push(p.bold(fit(checklist.title)));
    for (const item of fitChecklist(checklist.items, checkN - 1)) {
      lines.push(item.mark ? paintMark(fit(`  ${MARKS[item.mark]} ${item.text}`), item.mark, p) : p.dim(fit(`  ${item.text}`)));
    }
  }
  if (thought && thoughtN > 0) lines.push(p.dim(fit(thought)));
  for (const row of answer.slice(answer.length - answerN)) lines.push(fit(`${p.dim("┆")} ${row}`));
  if (notice && noticeN > 0) lines.push(p.yellow(fit(`! ${notice}`)));
  return lines.slice(0, height);
}

/** Rows of the answer shown at most, its latest. */
const ANSWER_ROWS = 6;

/**
 * The last `rows` rows `text` fills at `width` columns: its lines, each
 * broken every `width` columns (wide characters counted as two), from the
 * line's start, so a row stays as it is while the text grows. Only the last
 * lines are measured.
 */
export function tailRows(text: string, width: number, rows: number): string[] {
  const out: string[] = [];
  const lines = text.replace(/\t/g, " ").replace(/\r/g, "").split("\n");
  // A text that ends with a line break is still to write its next line: no empty last row.
  if (lines.length > 1 && lines.at(-1) === "") lines.pop();
  for (let i = lines.length - 1; i >= 0 && out.length < rows; i--) {
    const broken = breakLine(lines[i] ?? "", width);
    out.unshift(...broken.slice(-(rows - out.length)));
  }
  return out;
}

/** A line in rows of at most `width` columns; printable ASCII (one column a character) without measuring. */
function breakLine(line: string, width: number): string[] {
  if (/^[\x20-\x7e]*$/.test(line)) {
    const rows: string[] = [];
    for (let at = 0; at < line.length || rows.length === 0; at += width) rows.push(line.slice(at, at + width));
    return rows;
  }
  const rows: string[] = [];
  let row = "";
  let used = 0;
  for (const ch of line) {
    const w = stringWidth(ch);
    if (used + w > width && row !== "") {
      rows.push(row);
      row = "";
      used = 0;
    }
    row += ch;
    used += w;
  }
  rows.push(row);
  return rows;
}

/** What remains in the scrollback when the run is over: one line. */
export function renderSummary(view: LiveState, options: { width: number; now: number; color?: boolean; interrupted?: boolean }): string[] {
  const p = painter(options.color ?? false);
  const { start, end } = span(view.run, options.now);
  const took = elapsed(end - start);
  const outcome = view.run.status;
  const head = options.interrupted
    ? p.yellow(`✗ interrupted after ${took}`)
    : outcome === "answer"
      ? p.green(`✓ answered in ${took}`)
      : outcome === "paused"
        ? p.yellow(`⏸ paused after ${took}`)
        : outcome === "blocked"
          ? p.red(`⛔ blocked after ${took}`)
          : p.red(`✗ ${outcome === "error" ? "failed" : "stopped"} after ${took}`);
  return [truncate([head, ...figures(view)].join(" · "), Math.max(1, options.width))];
}

/**
 * At most `width` columns, cut with an ellipsis. cli-truncate counts columns
 * (wide characters, emoji, colours), but may leave a line one column over
 * when a wide character straddles the cut: cut again one column shorter.
 */
function truncate(text: string, width: number): string {
  let out = cliTruncate(text, width);
  for (let w = width - 1; w > 0 && stringWidth(out) > width; w--) out = cliTruncate(text, w);
  return stringWidth(out) > width ? "" : out;
}

const count = (n: number) => n.toLocaleString("en-US");

/** `3 model calls`, `3/20 model calls` against a budget's limit. */
function counted(n: number, limit: number | undefined, what: string): string {
  const total = limit ?? n;
  return `${count(n)}${limit !== undefined ? `/${count(limit)}` : ""} ${what}${total === 1 ? "" : "s"}`;
}

/** Calls, tokens and cost, each against the team's budget when it limits it (docs/budgets.md). */
function figures(view: LiveState): string[] {
  const b = view.config.budget ?? {};
  const run = view.run;
  const parts = [
    counted(run.model_calls, b.max_model_calls, "model call"),
    counted(run.tool_calls, b.max_tool_calls, "tool call"),
    `${run.usage.unknown ? "≥" : ""}${counted(run.usage.total_tokens, b.max_tokens, "token")}`,
  ];
  // A cost when a model has a price, or the budget limits it.
  if (b.max_cost_usd !== undefined || view.cost > 0)
    parts.push(`$${view.cost.toFixed(4)}${b.max_cost_usd !== undefined ? ` of $${b.max_cost_usd.toFixed(2)}` : ""}`);
  return parts;
}

function spendLine(view: LiveState, now: number): string {
  const { start, end } = span(view.run, now);
  const limit = view.config.budget?.max_seconds;
  return [`${elapsed(end - start)}${limit !== undefined ? ` of ${limit}s` : ""}`, ...figures(view)].join(" · ");
}

/** When the run started and ended (or `now`, while it goes on). */
function span(run: RunTree, now: number): { start: number; end: number } {
  const end = run.end ? Date.parse(run.end.at) : now;
  return { start: run.events > 0 ? Date.parse(run.started_at) : end, end };
}

type Tone = "running" | "done" | "failed" | "more";

interface TreeRow {
  text: string;
  tone: Tone;
  /** Lower is kept first when rows are short. */
  rank: number;
}

/** The agent tree, depth first; a finished agent is one line and hides what it called. */
function treeRows(view: LiveState, now: number): TreeRow[] {
  const rows: TreeRow[] = [];
  const visit = (node: StepNode, depth: number) => {
    const indent = "  ".repeat(depth);
    if (node.ended_at !== undefined && node.status !== "running") {
      const ok = node.status !== "error";
      const finished = Date.parse(node.ended_at);
      const took = elapsed(finished - Date.parse(node.started_at));
      // Finished agents rank after running ones, the latest first.
      rows.push({ text: `${indent}${ok ? "✓" : "✗"} ${node.agent_id} ${took}${ok ? "" : " error"}`, tone: ok ? "done" : "failed", rank: 1e15 - finished });
      return;
    }
    // Running agents rank first: the entry agent, then the deepest (who does the work now), then their callers.
    rows.push({ text: `${indent}▸ ${runningText(view, node, now)}`, tone: "running", rank: depth === 0 ? 0 : 1e6 - depth });
    for (const id of node.steps) {
      const child = view.projection.step(id);
      if (child?.step_id !== undefined) visit(child, depth + 1);
    }
  };
  for (const root of agentRoots(view.run)) visit(root, 0);
  return rows;
}

function runningText(view: LiveState, node: StepNode, now: number): string {
  const since = (iso: string) => elapsed(now - Date.parse(iso));
  const parts = [`${node.agent_id}${node.agent_kind ? ` (${node.agent_kind})` : ""} ${since(node.started_at)}`];
  if (node.iteration !== undefined) parts.push(`#${node.iteration}`);
  if (node.state) parts.push(`${shortState(node.state)}${node.state_since !== undefined ? ` ${since(node.state_since)}` : ""}`);
  const calls = view.projection.running(node.id);
  const tools = calls.filter((c) => c.kind === "tool");
  const model = calls.find((c) => c.kind === "model");
  if (tools.length > 0) {
    const oldest = tools.map((t) => t.started_at).sort()[0] ?? node.started_at;
    const names = [...new Set(tools.map((t) => t.tool))];
    parts.push(`⚙ ${names.join(", ")}${tools.length > names.length ? ` ×${tools.length}` : ""} ${since(oldest)}`);
  } else if (model) {
    parts.push(`model ${since(model.started_at)}`);
  }
  return parts.join(" · ");
}

/** At most `rows` rows: the best ranked kept in tree order, the others counted in `… N more`. */
function fitTree(rows: TreeRow[], limit: number): TreeRow[] {
  if (rows.length <= limit) return rows;
  if (limit <= 0) return [];
  // One row: the deepest running agent, rather than a bare count.
  if (limit === 1)
    return [
      [...rows]
        .filter((r) => r.tone === "running")
        .sort((a, b) => a.rank - b.rank)
        .find((r) => r.rank > 0) ?? rows[0],
    ].filter((r) => r !== undefined);
  const keep = new Set([...rows.keys()].sort((a, b) => (rows[a]?.rank ?? 0) - (rows[b]?.rank ?? 0)).slice(0, limit - 1));
  const kept = rows.filter((_, i) => keep.has(i));
  kept.push({ text: `… ${rows.length - kept.length} more`, tone: "more", rank: 0 });
  return kept;
}

interface ShownItem {
  text: string;
  mark?: CheckMark;
}

/** At most `limit` lines of the checklist, a window from just before the first unfinished item. */
function fitChecklist(items: readonly { text: string; mark: CheckMark }[], limit: number): ShownItem[] {
  if (items.length <= limit) return [...items];
  if (limit <= 0) return [];
  // One line: the item in progress (else the next one to do), rather than a bare count.
  if (limit === 1)
    return [
      items.find((i) => i.mark === "active") ?? items.find((i) => i.mark === "pending" || i.mark === "failed") ?? items[items.length - 1] ?? { text: "" },
    ];
  const firstOpen = items.findIndex((i) => i.mark === "active" || i.mark === "pending" || i.mark === "failed");
  let start = Math.max(0, (firstOpen < 0 ? items.length : firstOpen) - 1);
  // Lines for items: the limit less a `… N more` above (when start > 0) and one below (when items remain).
  for (;;) {
    const above = start > 0 ? 1 : 0;
    const room = limit - above;
    const below = start + room < items.length ? 1 : 0;
    const shown = room - below;
    if (shown >= 1 || start === 0) {
      const out: ShownItem[] = [];
      if (above) out.push({ text: `… ${start} more` });
      out.push(...items.slice(start, start + Math.max(shown, 0)));
      if (below) out.push({ text: `… ${items.length - start - Math.max(shown, 0)} more` });
      return out.slice(0, limit);
    }
    start -= 1;
  }
}

function paintRow(text: string, tone: Tone, p: Paint): string {
  if (tone === "running") return p.cyan(text);
  if (tone === "done") return p.green(text);
  if (tone === "failed") return p.red(text);
  return p.dim(text);
}

function paintMark(text: string, mark: CheckMark, p: Paint): string {
  if (mark === "done") return p.green(text);
  if (mark === "active") return p.yellow(text);
  if (mark === "failed") return p.red(text);
  if (mark === "skipped") return p.dim(text);
  return text;
}
