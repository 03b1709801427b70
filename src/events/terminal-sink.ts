/**
 * The run as a log for people, append-only: one or a few lines per event as
 * it comes (the current agent's recursions, plans, tool calls with
 * durations, compact state changes, the todo list's changes), indented as
 * agents call agents, never a cursor movement. `runtime exec` shows it with
 * --verbose, --events ndjson or --progress without a terminal; in a terminal
 * it otherwise shows the live view (./live/), the one view drawn in place.
 * Depths, the run's start and the todo lists come from the run's projection
 * (./projection.ts).
 */
import type { EventSink } from "./bus.js";
import { describeEvent } from "./describe.js";
import { clip, compact, formatBudget, formatDuration, msBetween, painter, todoLine, todoProgress, tokens, type Paint } from "./format.js";
import { compactedText, RunProjection } from "./projection.js";
import type { EventOf, RunEvent, TodoItem } from "./types.js";

/** Anything with a `write` of text: `process.stderr`, a `Writable`, a test's collector. */
export interface TextOut {
  write(chunk: string): unknown;
}

export interface TerminalSinkOptions {
  /** ANSI colours. */
  color: boolean;
}

/**
 * The terminal sink: call it with events; `answer()` with the answer's text
 * as it is written (src/cli/answer-feed.ts: never a tool-call reply's raw
 * deltas), written as it comes; `close()` flushes what is pending (a chain
 * of states, an answer's unfinished line).
 */
export type TerminalSink = EventSink & { answer(text: string): void; close(): void };

/** The log on `stream` (normally stderr). */
export function terminalSink(stream: TextOut, options: TerminalSinkOptions): TerminalSink {
  return new TerminalLog(stream, options).sink();
}

class TerminalLog {
  private readonly paint: Paint;
  private readonly projection = new RunProjection();
  private states: { key: string; indent: string; text: string; last: string } | undefined;
  /** The last thing written is a line of the answer, not yet ended. */
  private answerOpen = false;
  private closed = false;

  constructor(
    private readonly out: TextOut,
    options: TerminalSinkOptions,
  ) {
    this.paint = painter(options.color);
  }

  sink(): TerminalSink {
    const sink = ((event: RunEvent) => this.onEvent(event)) as TerminalSink;
    sink.answer = (text: string) => this.answer(text);
    sink.close = () => this.close();
    return sink;
  }

  /** Events come masked from the bus (src/events/bus.ts). */
  private onEvent(e: RunEvent): void {
    if (this.closed) return;
    if (e.type !== "state.changed") this.flushStates();
    // A todo delta not newer than the list seen for its session is stale: nothing to say.
    const before = "session_id" in e && e.type !== "run.started" ? this.projection.tree.todos[e.session_id] : undefined;
    if (before && "version" in e && e.version <= before.version) return void this.projection.apply(e);
    this.projection.apply(e);
    const p = this.paint;
    const indent = this.indentOf(e);
    const log = (text: string) => this.log(`${indent}${text}`);
    switch (e.type) {
      case "run.started":
        log(`${p.bold("▶ run")} ${p.dim(e.task_id)}: ${clip(e.input, 120)}`);
        break;
      case "agent.started":
        log(`${p.cyan(`▶ ${e.agent_id}`)} (${e.kind})${e.parent_step_id ? `: ${clip(e.input, 100)}` : ""}`);
        break;
      case "agent.finished":
        log(
          e.result_type === "answer"
            ? `${p.green(`■ ${e.agent_id}`)} answered · ${tokens(e.usage)}`
            : p.red(`✗ ${e.agent_id} error: ${clip(e.error ?? "", 200)}`),
        );
        break;
      case "state.changed":
        this.onStates(e, indent);
        break;
      case "recursion.started":
        log(`${p.bold(`recursion ${e.iteration}`)}${e.trace_id ? p.dim(` · trace ${e.trace_id}`) : ""}`);
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
      case "context.compacted":
        log(p.yellow(`! ${compactedText(e)}`));
        break;
      case "llm.error":
        log(p.red(`✗ llm ${e.model} error: ${clip(e.error, 200)}`));
        break;
      case "tool.progress":
        log(p.dim(`  ${describeEvent(e) ?? e.tool}`));
        break;
      case "tool.finished":
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
        e.steps.forEach((step, i) => {
          log(`  ${e.type === "plan.updated" ? (i < done ? "[x] " : "[ ] ") : ""}${i + 1}. ${clip(step, 120)}`);
        });
        break;
      }
      case "todo.updated":
      case "todo.completed":
      case "todo.item_progress":
        this.onTodo(e, indent, before?.todos);
        break;
      case "run.resumed":
        log(`${p.bold("⟳ resumed")} ${p.dim(e.task_id)} after event ${e.after_seq}: ${clip(e.input, 120)}`);
        break;
      case "approval.requested":
        log(p.yellow(`? ${e.tool} waits for approval (call ${e.call_id})${e.in_doubt ? ": it may have run before the run stopped" : ""}`));
        break;
      case "approval.decided":
        log(`${e.decision === "approve" ? p.green("✓ approved") : p.red("✗ denied")} ${e.tool}${e.reason ? `: ${clip(e.reason, 120)}` : ""}`);
        break;
      case "guardrail.passed":
        log(p.dim(`guardrail ${e.name} (${e.on}${e.tool ? ` of ${e.tool}` : ""}) passed`));
        break;
      case "guardrail.tripped": {
        const how = e.action === "redact" ? p.yellow("redacted") : e.action === "retry" ? p.yellow("retry") : p.red("blocked");
        log(`guardrail ${e.name} (${e.on}${e.tool ? ` of ${e.tool}` : ""}) ${how}: ${clip(e.reason, 200)}`);
        break;
      }
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
        log(this.runFinished(e));
        if (e.budget) log(p.dim(formatBudget(e.budget)));
        break;
      case "tool.started":
      case "llm.request":
      case "llm.delta":
        break;
    }
  }

  /** A chain of state changes of one machine is one line, written when the chain ends (INIT → RECURSION → CALL_LLM). */
  private onStates(e: EventOf<"state.changed">, indent: string): void {
    const key = `${e.step_id ?? e.agent_id}/${e.machine}`;
    const path = [...(e.via ?? []), e.to].join(" → ");
    if (this.states?.key === key && this.states.last === e.from) {
      this.states.text += ` → ${path}`;
      this.states.last = e.to;
    } else {
      this.flushStates();
      this.states = { key, indent, text: `${this.paint.dim(`state ${e.machine}:`)} ${e.from} → ${path}`, last: e.to };
    }
  }

  /** How the run ended, timed since this process took the run up: its run.started, or its run.resumed. */
  private runFinished(e: EventOf<"run.finished">): string {
    const p = this.paint;
    const since = this.projection.tree.roots.findLast((r) => r.kind === "resumed")?.at ?? this.projection.tree.started_at;
    if (e.result_type === "answer") {
      const line = `${p.green("■ answer")} · ${formatDuration(msBetween(since, e.ts))} · ${tokens(e.usage)}`;
      // An unverified answer is still the answer, shown with what no check could trace (docs/design/verification.md).
      const findings = e.verification?.status === "failed" ? e.verification.findings : [];
      return findings.length > 0 ? [`${line} · ${p.yellow("unverified")}`, ...findings.map((f) => p.yellow(`  ? ${clip(f, 300)}`))].join("\n") : line;
    }
    if (e.result_type === "blocked") return p.red(`⛔ ${clip(e.error ?? "blocked by a guardrail", 300)}`);
    if (e.result_type === "paused") return p.yellow(`⏸ paused: waiting for approval of ${(e.approvals ?? []).map((a) => a.tool).join(", ")}`);
    return p.red(`✗ run failed: ${clip(e.error ?? "", 300)}`);
  }

  /** A full list once, then only the items that changed while it keeps its items; a delta as its one item. */
  private onTodo(e: EventOf<"todo.updated" | "todo.completed" | "todo.item_progress">, indent: string, seen: readonly TodoItem[] | undefined): void {
    if (e.type === "todo.item_progress") {
      this.log(`${indent}todo v${e.version} · ${todoLine(e.item)}`);
      return;
    }
    const todos = e.todos;
    this.log(`${indent}todo v${e.version}${e.type === "todo.completed" ? " completed" : ""} · ${todoProgress(todos)}`);
    const sameItems =
      e.type === "todo.updated" &&
      seen !== undefined &&
      seen.length === todos.length &&
      todos.every((t, i) => seen[i]?.index === t.index && seen[i]?.content === t.content);
    for (const [i, item] of todos.entries()) {
      const before = seen?.[i];
      if (!sameItems || before?.status !== item.status || before.notes !== item.notes) this.log(`${indent}  ${todoLine(item)}`);
    }
  }

  /** Two spaces per agent above this one: the projection knows who called whom. */
  private indentOf(e: RunEvent): string {
    let depth = 0;
    for (let step = e.step_id !== undefined ? this.projection.step(e.step_id) : undefined; step?.parent !== undefined; step = this.projection.step(step.parent))
      depth += 1;
    return "  ".repeat(depth);
  }

  private flushStates(): void {
    if (!this.states) return;
    const { indent, text } = this.states;
    this.states = undefined;
    this.log(`${indent}${text}`);
  }

  /**
   * The answer's text as it comes, each line after `  ┆ `: written at once,
   * not held to a line's end, so a person reads it while it is written. The
   * next log line ends an unfinished one.
   */
  private answer(text: string): void {
    if (this.closed || text === "") return;
    this.flushStates();
    const prefix = this.paint.dim("  ┆ ");
    let out = "";
    text.split("\n").forEach((piece, i) => {
      if (i > 0) {
        out += `${this.answerOpen ? "" : prefix}\n`;
        this.answerOpen = false;
      }
      if (piece === "") return;
      out += `${this.answerOpen ? "" : prefix}${piece}`;
      this.answerOpen = true;
    });
    this.out.write(out);
  }

  private endAnswer(): void {
    if (!this.answerOpen) return;
    this.answerOpen = false;
    this.out.write("\n");
  }

  private log(line: string): void {
    this.endAnswer();
    this.out.write(`${line}\n`);
  }

  private close(): void {
    if (this.closed) return;
    this.flushStates();
    this.endAnswer();
    this.closed = true;
  }
}
