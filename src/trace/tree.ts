/**
 * A stored run as a tree: task → steps (nested by parent_step_id) →
 * recursions → model and tool calls, with plans, todo lists, state changes
 * and errors in between. Plain text with box-drawing characters.
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
import { addUsage, ZERO_USAGE, type EventOf, type RunEvent, type TodoItem, type Usage } from "../events/types.js";
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

interface StepState {
  node: TreeNode;
  stepId?: string;
  agentId: string;
  kind?: string;
  startedAt?: string;
  finished?: EventOf<"agent.finished">;
  /** Where events without a trace_id of their own go: the latest recursion, or the step. */
  container: TreeNode;
  recursions: Map<string, RecursionState>;
  todos?: { version: number; todos: TodoItem[] };
}

interface RecursionState {
  node: TreeNode;
  label: string;
  firstTs: string;
  lastTs: string;
}

/** A stored run (every event of one task) as a tree. */
export function renderRunTree(events: readonly RunEvent[], options: TreeOptions = {}): string {
  const paint = painter(options.color ?? false);
  const first = events[0];
  if (first === undefined) return "";
  const started = events.find((e): e is EventOf<"run.started"> => e.type === "run.started");
  // A resumed run may have paused (or failed) before: its last run.finished is the one that counts.
  const finished = events.findLast((e): e is EventOf<"run.finished"> => e.type === "run.finished");
  const last = events[events.length - 1] ?? first;
  const usage = finished?.usage ?? sumUsage(events);
  const result = finished
    ? finished.result_type === "answer"
      ? paint.green("answer")
      : finished.result_type === "paused"
        ? paint.yellow("paused")
        : paint.red("error")
    : paint.yellow(`unfinished (last event seq ${last.seq})`);
  const lines = [
    paint.bold(`task ${first.task_id}`) +
      ` · agent ${started?.agent_id ?? first.agent_id} · ${result} · ` +
      `${formatDuration(msBetween((started ?? first).ts, (finished ?? last).ts))} · ${formatUsage(usage)}`,
    `started ${started?.ts ?? first.ts}`,
  ];
  if (started) lines.push(`input: ${clip(started.input, 200)}`);
  if (finished?.budget) lines.push(formatBudget(finished.budget));

  const roots = buildNodes(events, paint, options.maxValue ?? 100);
  if (finished?.result_type === "answer") roots.push(leaf(`${paint.green("answer")}: ${finished.answer ?? ""}`));
  else if (finished?.result_type === "paused") roots.push(leaf(paint.yellow(`⏸ ${pausedFor(finished)}`)));
  else if (finished) roots.push(leaf(paint.red(`✗ error: ${finished.error ?? "(no message)"}`)));
  else roots.push(leaf(paint.yellow("no run.finished: the run is still going or its process stopped")));
  return [...lines, ...renderNodes(roots)].join("\n") + "\n";
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
  const roots = buildNodes(events, paint, options.maxValue ?? 100);
  // One recursion belongs to one step, whose header would only repeat the line above.
  const nodes = roots.length === 1 ? (roots[0]?.children ?? []) : roots;
  return [header, ...renderNodes(nodes)].join("\n") + "\n";
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
  return [line(header, false), ...rows.map((row) => line(row, true))].join("\n") + "\n";
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

/** Turn events into nodes, one pass in seq order. */
function buildNodes(events: readonly RunEvent[], paint: Paint, maxValue: number): TreeNode[] {
  const roots: TreeNode[] = [];
  const steps = new Map<string, StepState>();
  const pendingTools = new Map<string, TreeNode>();
  const requestSize = new Map<TreeNode, number>();

  const stepOf = (e: RunEvent): StepState => {
    const key = e.step_id ?? `agent:${e.agent_id}`;
    let step = steps.get(key);
    if (!step) {
      const node: TreeNode = { text: "", children: [] };
      step = { node, agentId: e.agent_id, container: node, recursions: new Map() };
      if (e.step_id !== undefined) step.stepId = e.step_id;
      steps.set(key, step);
      const parent = e.parent_step_id === undefined ? undefined : steps.get(e.parent_step_id);
      (parent ? parent.container.children : roots).push(node);
    }
    return step;
  };

  for (const e of events) {
    if (e.type === "run.started") continue;
    // Where a run stopped and went on (docs/durable-runs.md): said at the top level, in order.
    if (e.type === "run.finished") {
      if (e !== events.findLast((x) => x.type === "run.finished")) {
        roots.push(leaf(e.result_type === "paused" ? paint.yellow(`⏸ ${pausedFor(e)}`) : paint.red(`✗ stopped: ${e.error ?? e.result_type}`)));
      }
      continue;
    }
    if (e.type === "run.resumed") {
      roots.push(leaf(paint.cyan(`⟳ resumed at ${e.ts} (after event ${e.after_seq})`)));
      continue;
    }
    const step = stepOf(e);
    const container = containerOf(step, e);
    const add = (text: string, children: TreeNode[] = []) => {
      const node = { text, children };
      container.children.push(node);
      return node;
    };
    switch (e.type) {
      case "agent.started":
        step.kind = e.kind;
        step.startedAt = e.ts;
        break;
      case "agent.finished":
        step.finished = e;
        if (e.result_type === "error") step.node.children.push(leaf(paint.red(`✗ error: ${e.error ?? "(no message)"}`)));
        break;
      case "state.changed": {
        const prev = container.children[container.children.length - 1];
        const lead = `state ${e.machine}: `;
        const path = [...(e.via ?? []), e.to].join(" → ");
        if (prev?.text.startsWith(lead) && prev.text.endsWith(` ${e.from}`)) prev.text += ` → ${path}`;
        else add(`${lead}${e.from} → ${path}`);
        break;
      }
      case "recursion.started":
        break; // containerOf opened the recursion node
      case "llm.request":
        requestSize.set(container, e.messages);
        break;
      case "llm.response": {
        const msgs = requestSize.get(container);
        const parts = [
          `llm ${e.model}${e.model_name ? ` (${e.model_name})` : ""}`,
          e.action_type ?? (e.tool_calls?.length ? "tool_calls" : "reply"),
          e.usage.unknown ? tokens(e.usage) : `${e.usage.total_tokens} tok (${e.usage.prompt_tokens}+${e.usage.completion_tokens})`,
          formatDuration(e.duration_ms),
        ];
        if (msgs !== undefined) parts.push(`${msgs} msgs`);
        if (e.finish_reason === "length") parts.push(paint.red("cut off"));
        const children = e.reasoning ? [leaf(paint.dim(`reasoning: ${clip(oneLine(e.reasoning), maxValue)}`))] : [];
        if (e.thought) children.push(leaf(paint.dim(`thought: ${clip(e.thought, maxValue)}`)));
        if (e.error) children.push(leaf(paint.red(`refused: ${clip(oneLine(e.error), maxValue)}`)));
        add(parts.join(" · "), children);
        break;
      }
      case "llm.delta":
        break;
      case "llm.error":
        add(paint.red(`✗ llm ${e.model}${e.model_name ? ` (${e.model_name})` : ""} error: ${oneLine(e.error)}`));
        break;
      case "llm.notice":
        add(paint.yellow(`! ${oneLine(e.message)}`));
        break;
      case "tool.started":
        pendingTools.set(
          `${e.step_id ?? ""}/${e.call_id}`,
          add(paint.yellow(`tool ${e.tool} … no result recorded`) + `  ${compact(e.arguments, maxValue)}`),
        );
        break;
      case "tool.finished": {
        const text = e.ok
          ? `tool ${e.tool} ${paint.green("✓")} ${formatDuration(e.duration_ms)}  ${compact(e.arguments, maxValue)} → ${compact(e.result, maxValue)}`
          : paint.red(`✗ tool ${e.tool} ${formatDuration(e.duration_ms)}`) +
            `  ${compact(e.arguments, maxValue)} ${paint.red(`error: ${clip(e.error ?? "", maxValue * 2)}`)}`;
        const key = `${e.step_id ?? ""}/${e.call_id}`;
        const pending = pendingTools.get(key);
        if (pending) {
          pending.text = text;
          pendingTools.delete(key);
        } else add(text);
        break;
      }
      case "plan.created":
        add(`plan (${e.steps.length} steps)`, e.steps.map((s, i) => leaf(`${i + 1}. ${clip(s, maxValue)}`)));
        break;
      case "plan.updated": {
        const done = e.finished ?? 0;
        add(
          `plan updated (${done}/${e.steps.length} finished)`,
          e.steps.map((s, i) => leaf(`${i < done ? "[x]" : "[ ]"} ${i + 1}. ${clip(s, maxValue)}`)),
        );
        break;
      }
      case "todo.updated":
      case "todo.completed":
        if (!step.todos || e.version > step.todos.version) step.todos = { version: e.version, todos: e.todos };
        add(`todo v${e.version}${e.type === "todo.completed" ? " completed" : ""} · ${todoProgress(e.todos)}`);
        break;
      case "todo.item_progress":
        if (step.todos && e.version > step.todos.version) {
          step.todos = {
            version: e.version,
            todos: step.todos.todos.map((t) => (t.index === e.item.index ? e.item : t)),
          };
        }
        add(`todo v${e.version} · ${todoLine(e.item)}`);
        break;
      case "approval.requested":
        add(paint.yellow(`approval asked for ${e.tool} (call ${e.call_id}, approval ${e.approval_id})${e.in_doubt ? " · in doubt: it may have run" : ""}`));
        break;
      case "approval.decided":
        add(`${e.decision === "approve" ? paint.green("approved") : paint.red("denied")} ${e.tool} (call ${e.call_id})${e.reason ? `: ${e.reason}` : ""}`);
        break;
      case "answer.verified": {
        const head = `verify (${e.method}) round ${e.round}: `;
        if (e.verdict === "fail") add(paint.red(`${head}fail`), e.problems.map((p) => leaf(clip(oneLine(p), maxValue * 2))));
        else add(`${head}${e.verdict === "pass" ? paint.green("pass") : paint.yellow("unclear, answer taken")}`);
        break;
      }
      case "task.status": {
        const status = e.status === "error" ? paint.red(e.status) : e.status;
        add(`task ${e.plan_task_id} → ${status} · plan ${e.plan_id} ${e.plan_status}`);
        break;
      }
    }
    if (e.trace_id !== undefined) {
      const rec = step.recursions.get(e.trace_id);
      if (rec) rec.lastTs = e.ts;
    }
  }

  for (const step of steps.values()) finishStep(step, paint);
  return roots;
}

/** The node an event belongs under; opens a recursion node on recursion.started or an unseen trace_id. */
function containerOf(step: StepState, e: RunEvent): TreeNode {
  if (e.trace_id === undefined) return e.type === "recursion.started" ? openRecursion(step, e, undefined) : step.container;
  const known = step.recursions.get(e.trace_id);
  if (known) return known.node;
  return openRecursion(step, e, e.trace_id);
}

function openRecursion(step: StepState, e: RunEvent, traceId: string | undefined): TreeNode {
  const label =
    e.type === "recursion.started"
      ? `recursion ${e.iteration}${traceId ? ` · trace ${traceId}` : ""}`
      : `trace ${traceId ?? "?"}`;
  const node: TreeNode = { text: label, children: [] };
  step.node.children.push(node);
  step.container = node;
  if (traceId !== undefined) step.recursions.set(traceId, { node, label, firstTs: e.ts, lastTs: e.ts });
  return node;
}

/** Fill in the step's header line (now that its end is known), durations of recursions, the final todo list. */
function finishStep(step: StepState, paint: Paint): void {
  const f = step.finished;
  const parts = [`step ${stepLabel(step)}`];
  if (f) {
    parts.push(f.result_type === "answer" ? paint.green("answer") : paint.red("error"));
    if (step.startedAt) parts.push(formatDuration(msBetween(step.startedAt, f.ts)));
    parts.push(tokens(f.usage));
  } else {
    parts.push(paint.yellow("unfinished"));
  }
  step.node.text = parts.join(" · ");
  for (const rec of step.recursions.values()) {
    rec.node.text = `${rec.label} · ${formatDuration(msBetween(rec.firstTs, rec.lastTs))}`;
  }
  if (step.todos) {
    step.node.children.push({
      text: `todo list v${step.todos.version} · ${todoProgress(step.todos.todos)}`,
      children: step.todos.todos.map((t) => leaf(colorTodo(todoLine(t), t, paint))),
    });
  }
}

function stepLabel(step: StepState): string {
  return `${step.stepId ?? "-"} · ${step.agentId}${step.kind ? ` (${step.kind})` : ""}`;
}

function colorTodo(line: string, item: TodoItem, paint: Paint): string {
  if (item.status === "completed") return paint.green(line);
  if (item.status === "failed" || item.status === "blocked") return paint.red(line);
  return line;
}

function leaf(text: string): TreeNode {
  return { text, children: [] };
}

function sumUsage(events: readonly RunEvent[]): Usage {
  let total = ZERO_USAGE;
  for (const e of events) if (e.type === "llm.response") total = addUsage(total, e.usage);
  return total;
}

function pausedFor(e: EventOf<"run.finished">): string {
  return `paused: waiting for approval of ${(e.approvals ?? []).map((a) => `${a.tool} (call ${a.call_id}, approval ${a.approval_id})`).join(", ")}`;
}
