/**
 * The run's journal (docs/design/journal.md): every model reply and every
 * tool call's start and result, committed to the store at the engine's two
 * call points before the run moves on, under keys that name them within the
 * run whatever ids the models and the clock produced:
 *
 *   step key   `0` for the run's first step; a child step is its caller's key,
 *              `.`, and the child's ordinal among the caller's calls (`0.2`)
 *   model call `<step key>/m<k>`: the reply to model call k of that step
 *   tool call  `<step key>/t<n>`: the n-th tool call of that step
 *
 * Ordinals are taken when a call starts, in the order the step makes its
 * calls, so the same replies lead to the same keys: a later resume reads
 * "the reply to model call k of step s" here instead of asking the model.
 */
import { redactWithJson } from "../redact.js";
import type { ChatResponse, ToolCallRequest } from "../models/types.js";
import type { ToolOutcome } from "../tools/types.js";
import type { JournalEntry } from "../trace/store.js";

/** Where entries are committed: the trace store, or nowhere when tracing is off. */
export interface JournalSink {
  write(entry: JournalEntry): void;
  /** Commit what was written (and the events so far) now. */
  commit(): void;
}

/** A run's journal. Writes never throw into the run: a failing store is reported once. */
export class Journal {
  private warned = false;

  constructor(
    private readonly task_id: string,
    private readonly sink: JournalSink | undefined,
    private readonly secrets: readonly string[],
    private readonly now: () => Date,
  ) {}

  /**
   * Make everything written so far durable. The engine calls it right before
   * the run acts outside the process: a model request, a tool's body.
   */
  commit(): void {
    this.sink?.commit();
  }

  modelReply(key: string, reply: ChatResponse): void {
    this.write(key, "model.reply", reply);
  }

  toolStarted(key: string, call: ToolCallRequest, args: unknown): void {
    this.write(key, "tool.started", { call_id: call.id, tool: call.name, arguments: args });
  }

  toolResult(key: string, outcome: ToolOutcome): void {
    this.write(key, "tool.result", outcome);
  }

  private write(key: string, kind: JournalEntry["kind"], value: unknown): void {
    if (!this.sink) return;
    try {
      const { json } = redactWithJson(value, this.secrets);
      this.sink.write({ task_id: this.task_id, key, kind, ts: this.now().toISOString(), json });
    } catch (err) {
      if (!this.warned) process.emitWarning(`journal of ${this.task_id}: ${err instanceof Error ? err.message : String(err)}`, "JournalWarning");
      this.warned = true;
    }
  }
}

/** The keys of one step: its own, its model and tool calls', its children's. */
export class StepKeys {
  private models = 0;
  private tools = 0;
  private children = 0;

  constructor(readonly key: string) {}

  nextModel(): string {
    return `${this.key}/m${this.models++}`;
  }

  nextTool(): string {
    return `${this.key}/t${this.tools++}`;
  }

  nextChild(): string {
    return `${this.key}.${this.children++}`;
  }
}
