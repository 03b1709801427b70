/**
 * Live progress for people: the current agent and recursion, plans, tool calls
 * with durations, compact state changes and the todo list as a checklist. On a
 * terminal the status line and checklist are a block redrawn in place at the
 * bottom; elsewhere everything is plain appended lines. `runtime exec`
 * shows it with --verbose, --events ndjson or --progress without a terminal;
 * in a terminal it otherwise shows the compact live view (./live/).
 */
import type { EventSink } from "./bus.js";
import {
  clip,
  compact,
  formatBudget,
  formatDuration,
  msBetween,
  painter,
  todoLine,
  todoProgress,
  tokens,
  type Paint,
} from "./format.js";
import type { RunEvent, TodoItem } from "./types.js";

/** Anything with a `write` of text: `process.stderr`, a `Writable`, a test's collector. */
export interface TextOut {
  write(chunk: string): unknown;
  columns?: number;
}

export interface TerminalSinkOptions {
  /** Redraw the status line and checklist in place with ANSI cursor moves. */
  tty: boolean;
  /** ANSI colours. */
  color: boolean;
  /** Show streamed model tokens (llm.delta). @default false */
  deltas?: boolean;
  /** Width the live block is cut to. @default stream.columns, else 100 */
  columns?: number;
}

/** The terminal sink: call it with events; `close()` flushes and leaves the final checklist on screen. */
export type TerminalSink = EventSink & { close(): void };

const ERASE_TO_END = "\x1b[J";

/** Live progress on `stream` (normally stderr). */
export function terminalSink(stream: TextOut, options: TerminalSinkOptions): TerminalSink {
  return new TerminalView(stream, options).sink();
}

interface TodoState {
  version: number;
  todos: TodoItem[];
}

class TerminalView {
  private readonly paint: Paint;
  private readonly depth = new Map<string, number>();
  private readonly todos = new Map<string, TodoState>();
  private readonly runningTools = new Map<string, string>();
  private readonly runStartedAt = new Map<string, string>();
  private status: { agent: string; kind?: string; iteration?: number; state?: string } | undefined;
  private states: { key: string; indent: string; text: string; last: string } | undefined;
  private delta = "";
  private deltaIndent = "";
  private blockLines = 0;
  private closed = false;

  constructor(
    private readonly out: TextOut,
    private readonly options: TerminalSinkOptions,
  ) {
    this.paint = painter(options.color);
  }

  sink(): TerminalSink {
    const sink = ((event: RunEvent) => this.onEvent(event)) as TerminalSink;
    sink.close = () => this.close();
    return sink;
  }

  /** Events come masked from the bus (src/events/bus.ts). */
  private onEvent(e: RunEvent): void {
    if (this.closed) return;
    if (e.type !== "state.changed") this.flushStates();
    if (e.type !== "llm.delta") this.flushDelta(true);
    const p = this.paint;
    const indent = this.indentOf(e);
    const log = (text: string) => this.log(`${indent}${text}`);
    switch (e.type) {
      case "run.started":
        this.runStartedAt.set(e.task_id, e.ts);
        log(`${p.bold("▶ run")} ${p.dim(e.task_id)}: ${clip(e.input, 120)}`);
        break;
      case "agent.started":
        if (e.step_id !== undefined) this.depth.set(e.step_id, this.depthOf(e.parent_step_id) + (e.parent_step_id ? 1 : 0));
        this.status = { agent: e.agent_id, kind: e.kind };
        this.log(`${this.indentOf(e)}${p.cyan(`▶ ${e.agent_id}`)} (${e.kind})${e.parent_step_id ? `: ${clip(e.input, 100)}` : ""}`);
        break;
      case "agent.finished":
        log(
          e.result_type === "answer"
            ? `${p.green(`■ ${e.agent_id}`)} answered · ${tokens(e.usage)}`
            : p.red(`✗ ${e.agent_id} error: ${clip(e.error ?? "", 200)}`),
        );
        break;
      case "state.changed": {
        this.setStatus(e, { state: e.to });
        const key = `${e.step_id ?? e.agent_id}/${e.machine}`;
        const path = [...(e.via ?? []), e.to].join(" → ");
        if (this.states?.key === key && this.states.last === e.from) {
          this.states.text += ` → ${path}`;
          this.states.last = e.to;
        } else {
          this.flushStates();
          this.states = { key, indent, text: `${p.dim(`state ${e.machine}:`)} ${e.from} → ${path}`, last: e.to };
        }
        this.redraw();
        break;
      }
      case "recursion.started":
        this.setStatus(e, { iteration: e.iteration });
        log(`${p.bold(`recursion ${e.iteration}`)}${e.trace_id ? p.dim(` · trace ${e.trace_id}`) : ""}`);
        break;
      case "llm.request":
        this.redraw();
        break;
      case "llm.response":
        log(
          `llm ${e.model} → ${e.action_type ?? (e.tool_calls?.length ? "tool_calls" : "reply")} · ` +
            `${tokens(e.usage)} · ${formatDuration(e.duration_ms)}` +
            (e.finish_reason === "length" ? p.red(" · cut off") : ""),
        );
        if (e.reasoning) log(p.dim(`  reasoning: ${clip(e.reasoning, 160)}`));
        if (e.thought) log(p.dim(`  thought: ${clip(e.thought, 160)}`));
        if (e.error) log(p.red(`  refused: ${clip(e.error, 160)}`));
        break;
      case "llm.notice":
        log(p.yellow(`! ${clip(e.message, 240)}`));
        break;
      case "llm.delta":
        if (this.options.deltas) {
          this.delta += e.text;
          this.deltaIndent = indent;
          this.flushDelta(false);
        }
        break;
      case "llm.error":
        log(p.red(`✗ llm ${e.model} error: ${clip(e.error, 200)}`));
        break;
      case "tool.started":
        this.runningTools.set(e.call_id, e.tool);
        this.redraw();
        break;
      case "tool.finished":
        this.runningTools.delete(e.call_id);
        log(
          e.ok
            ? `tool ${e.tool} ${p.green("✓")} ${formatDuration(e.duration_ms)}  ${compact(e.arguments, 80)} → ${compact(e.result, 80)}`
            : `${p.red(`✗ tool ${e.tool}`)} ${formatDuration(e.duration_ms)}  ${compact(e.arguments, 80)} ${p.red(`error: ${clip(e.error ?? "", 160)}`)}`,
        );
        break;
      case "plan.created":
      case "plan.updated": {
        const done = e.type === "plan.updated" ? (e.finished ?? 0) : 0;
        log(e.type === "plan.created" ? p.bold("plan:") : p.bold(`plan updated (${done}/${e.steps.length} finished):`));
        e.steps.forEach((step, i) => log(`  ${e.type === "plan.updated" ? (i < done ? "[x] " : "[ ] ") : ""}${i + 1}. ${clip(step, 120)}`));
        break;
      }
      case "todo.updated":
      case "todo.completed":
      case "todo.item_progress":
        this.onTodo(e, indent);
        break;
      case "run.resumed":
        this.runStartedAt.set(e.task_id, e.ts);
        log(`${p.bold("⟳ resumed")} ${p.dim(e.task_id)} after event ${e.after_seq}: ${clip(e.input, 120)}`);
        break;
      case "approval.requested":
        log(p.yellow(`? ${e.tool} waits for approval (call ${e.call_id})${e.in_doubt ? ": it may have run before the run stopped" : ""}`));
        break;
      case "approval.decided":
        log(`${e.decision === "approve" ? p.green("✓ approved") : p.red("✗ denied")} ${e.tool}${e.reason ? `: ${clip(e.reason, 120)}` : ""}`);
        break;
      case "answer.verified":
        log(
          e.verdict === "fail"
            ? p.red(`✗ verify (${e.method}) round ${e.round}: ${clip(e.problems.join("; "), 240)}`)
            : `verify (${e.method}) round ${e.round} ${e.verdict === "pass" ? p.green("✓") : p.yellow("? unclear, answer taken")}`,
        );
        break;
      case "task.status":
        log(`task ${e.plan_task_id} → ${e.status === "error" ? p.red(e.status) : e.status} · plan ${e.plan_id} ${e.plan_status}`);
        break;
      case "run.finished":
        this.status = undefined;
        log(
          e.result_type === "answer"
            ? `${p.green("■ answer")} · ${formatDuration(msBetween(this.runStartedAt.get(e.task_id) ?? e.ts, e.ts))} · ${tokens(e.usage)}`
            : e.result_type === "paused"
              ? p.yellow(`⏸ paused: waiting for approval of ${(e.approvals ?? []).map((a) => a.tool).join(", ")}`)
              : p.red(`✗ run failed: ${clip(e.error ?? "", 300)}`),
        );
        if (e.budget) log(p.dim(formatBudget(e.budget)));
        break;
    }
  }

  /** Versioned todo deltas: a version not newer than the last one seen for the session is stale and dropped. */
  private onTodo(e: Extract<RunEvent, { session_id: string }>, indent: string): void {
    const seen = this.todos.get(e.session_id);
    if (seen && e.version <= seen.version) return;
    const todos =
      e.type === "todo.item_progress"
        ? upsertItem(seen?.todos ?? [], e.item)
        : e.todos;
    this.todos.set(e.session_id, { version: e.version, todos });
    if (this.options.tty) {
      if (e.type === "todo.completed") this.log(`${indent}${this.paint.green(`✓ todo list completed (v${e.version})`)}`);
      else this.redraw();
      return;
    }
    if (e.type === "todo.item_progress") {
      this.log(`${indent}todo v${e.version} · ${todoLine(e.item)}`);
      return;
    }
    this.log(`${indent}todo v${e.version}${e.type === "todo.completed" ? " completed" : ""} · ${todoProgress(todos)}`);
    // Appended output cannot redraw, so a list that kept its items shows only what changed.
    const sameItems =
      e.type === "todo.updated" &&
      seen !== undefined &&
      seen.todos.length === todos.length &&
      todos.every((t, i) => seen.todos[i]?.index === t.index && seen.todos[i]?.content === t.content);
    for (const [i, item] of todos.entries()) {
      const before = seen?.todos[i];
      if (!sameItems || before?.status !== item.status || before.notes !== item.notes) this.log(`${indent}  ${todoLine(item)}`);
    }
  }

  private setStatus(e: RunEvent, patch: { iteration?: number; state?: string }): void {
    if (!this.status || this.status.agent !== e.agent_id) this.status = { agent: e.agent_id };
    Object.assign(this.status, patch);
  }

  private indentOf(e: RunEvent): string {
    return "  ".repeat(this.depthOf(e.step_id));
  }

  private depthOf(stepId: string | undefined): number {
    return stepId === undefined ? 0 : (this.depth.get(stepId) ?? 0);
  }

  private flushStates(): void {
    if (!this.states) return;
    const { indent, text } = this.states;
    this.states = undefined;
    this.log(`${indent}${text}`);
  }

  /** Print streamed text line by line; `all` also prints an unfinished last line. */
  private flushDelta(all: boolean): void {
    if (this.delta === "") return;
    const lines = this.delta.split("\n");
    const rest = lines.pop() ?? "";
    this.delta = all ? "" : rest;
    if (all && rest !== "") lines.push(rest);
    for (const line of lines) this.log(`${this.deltaIndent}${this.paint.dim(`  ┆ ${line}`)}`);
  }

  /** Append a line above the live block. */
  private log(line: string): void {
    if (!this.options.tty) {
      this.out.write(`${line}\n`);
      return;
    }
    this.out.write(`${this.eraseBlock()}${line}\n${this.drawBlock()}`);
  }

  private redraw(): void {
    if (this.options.tty) this.out.write(this.eraseBlock() + this.drawBlock());
  }

  /** Move the cursor up to the block's first line and clear from there down. */
  private eraseBlock(): string {
    if (this.blockLines === 0) return "";
    const seq = `\x1b[${this.blockLines}A\r${ERASE_TO_END}`;
    this.blockLines = 0;
    return seq;
  }

  private drawBlock(): string {
    // A pty without a size reports 0 columns; treat it as unknown.
    const columns = this.options.columns ?? (this.out.columns ? this.out.columns : 100);
    const width = Math.max(20, columns - 1);
    const lines: string[] = [];
    if (this.status && !this.closed) {
      const s = this.status;
      const parts = [`${s.agent}${s.kind ? ` (${s.kind})` : ""}`];
      if (s.iteration !== undefined) parts.push(`recursion ${s.iteration}`);
      if (s.state) parts.push(s.state);
      if (this.runningTools.size > 0) parts.push(`running ${[...new Set(this.runningTools.values())].join(", ")}`);
      lines.push(this.paint.cyan(clip(`● ${parts.join(" · ")}`, width)));
    }
    for (const [session, state] of this.todos) {
      lines.push(this.paint.bold(clip(`todo v${state.version} · ${todoProgress(state.todos)}${this.todos.size > 1 ? ` · ${session}` : ""}`, width)));
      for (const item of state.todos) lines.push(colorTodo(`  ${clip(todoLine(item), width - 2)}`, item, this.paint));
    }
    this.blockLines = lines.length;
    return lines.map((l) => `${l}\n`).join("");
  }

  private close(): void {
    if (this.closed) return;
    this.flushStates();
    this.flushDelta(true);
    this.closed = true;
    // The final checklist stays on screen; only the status line goes.
    this.redraw();
  }
}

function upsertItem(todos: readonly TodoItem[], item: TodoItem): TodoItem[] {
  const next = todos.map((t) => (t.index === item.index ? item : t));
  if (!todos.some((t) => t.index === item.index)) next.push(item);
  return next.sort((a, b) => a.index - b.index);
}

function colorTodo(line: string, item: TodoItem, paint: Paint): string {
  if (item.status === "completed") return paint.green(line);
  if (item.status === "failed" || item.status === "blocked") return paint.red(line);
  if (item.status === "in_progress") return paint.yellow(line);
  return line;
}

