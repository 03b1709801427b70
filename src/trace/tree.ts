/**
 * A stored run as a tree: task → steps (nested by parent_step_id) →
 * recursions → model and tool calls, with plans, todo lists, state changes
 * and errors in between. Plain text with box-drawing characters, drawn from
 * the run's projection (src/events/projection.ts).
 */
import {
  formatBudget,
  clip,
  compact,
  formatDuration,
  formatUsage,
  msBetween,
  oneLine,
  painter,
  todoLine,
  todoProgress,
  tokens,
  type Paint,
} from "../events/format.js";
import { project, type Entry, type ModelCall, type RootEntry, type RunEnd, type RunTree, type StepNode } from "../events/projection.js";
import type { RunEvent, TodoItem } from "../events/types.js";
import type { RunSummary } from "../store/runs.js";

export interface TreeOptions {
  /** ANSI colours (errors red, successes green). @default false */
  color?: boolean;
  /** Longest rendering of tool arguments, results and thoughts. @default 100 */
  maxValue?: number;
}

/** One line of the tree (continuation lines allowed) and what hangs below it. */
interface TreeNode {
  text: string;
  children: TreeNode[];
}

/** A stored run (every event of one task) as a tree. */
export function renderRunTree(events: readonly RunEvent[], options: TreeOptions = {}): string {
  const paint = painter(options.color ?? false);
  if (events.length === 0) return "";
  const run = project(events);
  const end = run.end;
  const usage = end?.usage ?? run.usage;
  const result = end
    ? end.result_type === "answer"
      ? paint.green("answer")
      : end.result_type === "paused"
        ? paint.yellow("paused")
        : end.result_type === "blocked"
          ? paint.red("blocked")
          : paint.red("error")
    : paint.yellow(`unfinished (last event seq ${run.last_seq})`);
  const lines = [
    paint.bold(`task ${run.task_id}`) +
      ` · agent ${run.agent_id} · ${result} · ` +
      `${formatDuration(msBetween(run.started_at, end?.at ?? run.last_at))} · ${formatUsage(usage)}`,
    `started ${run.started_at}`,
  ];
  if (run.input !== "") lines.push(`input: ${clip(run.input, 200)}`);
  if (end?.budget) lines.push(formatBudget(end.budget));

  const draw = new Drawer(run, paint, options.maxValue ?? 100);
  const roots = run.roots.map((r) => draw.root(r));
  if (end) roots.push(leaf(draw.end(end, "error")));
  else roots.push(leaf(paint.yellow("no run.finished: the run is still going or its process stopped")));
  return `${[...lines, ...renderNodes(roots)].join("\n")}\n`;
}

/** The events of one recursion (one trace_id), as a small tree; one per task should the id recur. */
export function renderTraceEvents(events: readonly RunEvent[], options: TreeOptions = {}): string {
  const byTask = new Map<string, RunEvent[]>();
  for (const e of events) byTask.set(e.task_id, [...(byTask.get(e.task_id) ?? []), e]);
  return [...byTask.values()].map((group) => renderOneTrace(group, options)).join("");
}

function renderOneTrace(events: readonly RunEvent[], options: TreeOptions): string {
  const paint = painter(options.color ?? false);
  const first = events[0];
  if (first === undefined) return "";
  const last = events[events.length - 1] ?? first;
  const header =
    paint.bold(`trace ${first.trace_id ?? "?"}`) +
    ` · task ${first.task_id} · agent ${first.agent_id}` +
    (first.step_id ? ` · step ${first.step_id}` : "") +
    ` · ${events.length} events · ${formatDuration(msBetween(first.ts, last.ts))}`;
  const run = project(events);
  const draw = new Drawer(run, paint, options.maxValue ?? 100);
  const roots = run.roots.map((r) => draw.root(r));
  // One recursion belongs to one step, whose header would only repeat the line above.
  const nodes = roots.length === 1 ? (roots[0]?.children ?? []) : roots;
  return `${[header, ...renderNodes(nodes)].join("\n")}\n`;
}

/** A table of runs: task_id, agent, started, duration, result, answer or error. */
export function formatRunList(runs: readonly RunSummary[], options: { color?: boolean } = {}): string {
  const paint = painter(options.color ?? false);
  const header = ["TASK_ID", "AGENT", "STARTED (UTC)", "DURATION", "RESULT", "ANSWER / ERROR"];
  const rows = runs.map((r) => [
    r.task_id,
    r.agent_id,
    r.started_at.slice(0, 19).replace("T", " "),
    r.finished_at ? formatDuration(msBetween(r.started_at, r.finished_at)) : "-",
    r.result_type ?? "unfinished",
    clip(r.result_type === "error" ? (r.error ?? "") : (r.answer ?? ""), 60),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] ?? "").length)));
  const line = (cells: string[], colorResult: boolean) =>
    cells
      .map((cell, i) => {
        const padded = i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0);
        if (!colorResult || i !== 4) return padded;
        return cell === "answer" ? paint.green(padded) : cell === "error" ? paint.red(padded) : paint.yellow(padded);
      })
      .join("  ")
      .trimEnd();
  return `${[line(header, false), ...rows.map((row) => line(row, true))].join("\n")}\n`;
}

/** Draw nodes with ├─ └─ │, continuation lines aligned under their first line. */
function renderNodes(nodes: readonly TreeNode[], prefix = ""): string[] {
  const out: string[] = [];
  nodes.forEach((node, i) => {
    const lastChild = i === nodes.length - 1;
    const [head = "", ...rest] = node.text.split("\n");
    const below = prefix + (lastChild ? "   " : "│  ");
    out.push(`${prefix}${lastChild ? "└─ " : "├─ "}${head}`);
    for (const line of rest) out.push(`${below}${node.children.length > 0 ? "│  " : ""}${line}`);
    out.push(...renderNodes(node.children, below));
  });
  return out;
}

/** The projection's nodes as lines of text. */
class Drawer {
  constructor(
    private readonly run: RunTree,
    private readonly paint: Paint,
    private readonly maxValue: number,
  ) {}

  root(entry: RootEntry): TreeNode {
    if (entry.kind === "step") return this.step(entry);
    // Where a run stopped and went on (docs/durable-runs.md): said at the top level, in order.
    if (entry.kind === "resumed") return leaf(this.paint.cyan(`⟳ resumed at ${entry.at} (after event ${entry.after_seq})`));
    return leaf(this.end(entry.end, "stopped"));
  }

  /** How the run ended: its answer, its pause, or its error (`stopped` before a resume). */
  end(end: RunEnd, failed: "error" | "stopped"): string {
    const p = this.paint;
    if (end.result_type === "paused")
      return p.yellow(
        `⏸ paused: waiting for approval of ${(end.approvals ?? []).map((a) => `${a.tool} (call ${a.call_id}, approval ${a.approval_id})`).join(", ")}`,
      );
    if (end.result_type === "blocked") return p.red(`⛔ ${end.error ?? "blocked by a guardrail"}`);
    if (failed === "stopped") return p.red(`✗ stopped: ${end.error ?? end.result_type}`);
    return end.result_type === "answer" ? `${p.green("answer")}: ${end.answer ?? ""}` : p.red(`✗ error: ${end.error ?? "(no message)"}`);
  }

  private step(step: StepNode): TreeNode {
    const p = this.paint;
    const parts = [`step ${step.step_id ?? "-"} · ${step.agent_id}${step.agent_kind ? ` (${step.agent_kind})` : ""}`];
    if (step.status === "running") parts.push(p.yellow("unfinished"));
    else {
      parts.push(step.status === "answer" ? p.green("answer") : p.red("error"));
      if (step.agent_kind !== undefined && step.ended_at !== undefined) parts.push(formatDuration(msBetween(step.started_at, step.ended_at)));
      if (step.usage) parts.push(tokens(step.usage));
    }
    const children = step.children.map((e) => this.entry(e));
    const list = step.todo_session !== undefined ? this.run.todos[step.todo_session] : undefined;
    if (list) {
      children.push({
        text: `todo list v${list.version} · ${todoProgress(list.todos)}`,
        children: list.todos.map((t) => leaf(colorTodo(todoLine(t), t, p))),
      });
    }
    return { text: parts.join(" · "), children };
  }

  private entry(e: Entry): TreeNode {
    const p = this.paint;
    const max = this.maxValue;
    switch (e.kind) {
      case "step":
        return this.step(e);
      case "recursion": {
        const label = e.iteration !== undefined ? `recursion ${e.iteration}${e.trace_id ? ` · trace ${e.trace_id}` : ""}` : `trace ${e.trace_id ?? "?"}`;
        const took = e.trace_id !== undefined ? ` · ${formatDuration(msBetween(e.started_at, e.last_at))}` : "";
        return {
          text: label + took,
          children: e.children.map((c) => this.entry(c)),
        };
      }
      case "model":
        return this.model(e);
      case "tool": {
        if (e.status === "running" || e.status === "unfinished")
          return leaf(`${p.yellow(`tool ${e.tool} … no result recorded`)}  ${compact(e.arguments, max)}`);
        return leaf(
          e.status === "ok"
            ? `tool ${e.tool} ${p.green("✓")} ${formatDuration(e.duration_ms ?? 0)}  ${compact(e.arguments, max)} → ${compact(e.result, max)}`
            : p.red(`✗ tool ${e.tool} ${formatDuration(e.duration_ms ?? 0)}`) +
                `  ${compact(e.arguments, max)} ${p.red(`error: ${clip(e.error ?? "", max * 2)}`)}`,
        );
      }
      case "states":
        return leaf(`state ${e.machine}: ${e.path.join(" → ")}`);
      case "plan": {
        if (!e.updated)
          return {
            text: `plan (${e.steps.length} steps)`,
            children: e.steps.map((s, i) => leaf(`${i + 1}. ${clip(s, max)}`)),
          };
        const done = e.finished ?? 0;
        return {
          text: `plan updated (${done}/${e.steps.length} finished)`,
          children: e.steps.map((s, i) => leaf(`${i < done ? "[x]" : "[ ]"} ${i + 1}. ${clip(s, max)}`)),
        };
      }
      case "todo":
        if (e.item) return leaf(`todo v${e.version} · ${todoLine(e.item)}`);
        return leaf(`todo v${e.version}${e.event === "todo.completed" ? " completed" : ""} · ${todoProgress(e.todos ?? [])}`);
      case "notice":
        return leaf(p.yellow(`! ${oneLine(e.message)}`));
      case "approval":
        if (!e.decided)
          return leaf(
            p.yellow(`approval asked for ${e.tool} (call ${e.call_id}, approval ${e.approval_id})${e.in_doubt ? " · in doubt: it may have run" : ""}`),
          );
        return leaf(`${e.decision === "approve" ? p.green("approved") : p.red("denied")} ${e.tool} (call ${e.call_id})${e.reason ? `: ${e.reason}` : ""}`);
      case "guardrail": {
        const what = `guardrail ${e.name} (${e.on}${e.tool ? ` of ${e.tool}` : ""})`;
        if (e.passed) return leaf(`${what} ${p.green("passed")}`);
        const how = e.action === "redact" ? p.yellow("redacted") : e.action === "retry" ? p.yellow("retry") : p.red("blocked");
        return leaf(`${what} ${how}: ${clip(oneLine(e.reason ?? ""), max * 2)}`);
      }
      case "verified": {
        const head = `verify (${e.method}) round ${e.round}: `;
        if (e.verdict === "fail")
          return {
            text: p.red(`${head}fail`),
            children: e.problems.map((x) => leaf(clip(oneLine(x), max * 2))),
          };
        return leaf(`${head}${e.verdict === "pass" ? p.green("pass") : p.yellow("unclear, answer taken")}`);
      }
      case "task":
        return leaf(`task ${e.plan_task_id} → ${e.status === "error" ? p.red(e.status) : e.status} · plan ${e.plan_id} ${e.plan_status}`);
      case "error":
        return leaf(p.red(`✗ error: ${e.error}`));
    }
  }

  private model(e: ModelCall): TreeNode {
    const p = this.paint;
    const name = `llm ${e.model ?? "?"}${e.model_name ? ` (${e.model_name})` : ""}`;
    if (e.status === "error") return leaf(p.red(`✗ ${name} error: ${oneLine(e.error ?? "")}`));
    if (e.status !== "ok") return leaf(p.yellow(`${name} … no reply recorded`));
    const usage = e.usage ?? {
      prompt_tokens: 0,
      completion_tokens: 0,
      total_tokens: 0,
    };
    const parts = [
      name,
      e.action ?? "reply",
      usage.unknown ? tokens(usage) : `${usage.total_tokens} tok (${usage.prompt_tokens}+${usage.completion_tokens})`,
      formatDuration(e.duration_ms ?? 0),
    ];
    if (e.messages !== undefined) parts.push(`${e.messages} msgs`);
    if (e.finish_reason === "length") parts.push(p.red("cut off"));
    const children = e.reasoning ? [leaf(p.dim(`reasoning: ${clip(oneLine(e.reasoning), this.maxValue)}`))] : [];
    if (e.thought) children.push(leaf(p.dim(`thought: ${clip(e.thought, this.maxValue)}`)));
    if (e.error) children.push(leaf(p.red(`refused: ${clip(oneLine(e.error), this.maxValue)}`)));
    return { text: parts.join(" · "), children };
  }
}

function colorTodo(line: string, item: TodoItem, paint: Paint): string {
  if (item.status === "completed") return paint.green(line);
  if (item.status === "failed" || item.status === "blocked") return paint.red(line);
  return line;
}

function leaf(text: string): TreeNode {
  return { text, children: [] };
}
