import type { RunEventBody, TodoItem, TodoStatus } from "../../events/types.js";
import type { TodoSessions, TodoSessionState, TrackedItem } from "../../store/todo-sessions.js";
import { checkTransition, isTerminal } from "./task-machine.js";
import { RuntimeError, unreachable } from "../../errors.js";

/** What a new list is written from: `write_todos` arguments. */
export interface TodoDraft {
  content: string;
  status?: TodoStatus;
}

export interface TodoLoopOptions {
  session_id: string;
  /** Emits a todo event; the runner adds the scope and the round's trace_id. */
  emit: (body: RunEventBody) => void;
  store?: TodoSessions;
  /** The list to start from, when the caller read it already (a resumed run reads it as it was). */
  initial?: TodoSessionState;
  /** Whether the run is going over what it did before a resume (src/kinds/types.ts `replaying`). */
  replaying?: () => boolean;
  now?: () => Date;
  /** Successful tool calls after which the active item is completed (the agent's `todo_complete_after`). */
  complete_after: number;
  /** Failed tool calls in a row after which the active item is blocked (the agent's `todo_block_after`). */
  block_after: number;
  /** The agent's work tools: an item that names one is completed only after a successful call of it. */
  work_tools?: readonly string[];
}

const MARK: Record<TodoStatus, string> = {
  pending: "[ ]",
  in_progress: "[>]",
  completed: "[x]",
  failed: "[!]",
  blocked: "[#]",
  skipped: "[-]",
};

/**
 * The todo list of one session while an agent loop runs (docs/design/todo-list-design.md). Tool
 * calls are attributed to the active item (the in_progress one, else the
 * first pending one, which starts): after `complete_after` successes it is
 * completed, after `block_after` failures in a row it is blocked. Manual
 * updates go through the same task machine and reset those counters, so
 * the automatic and the manual path never disagree. Every change emits an
 * event with a version that strictly increases per session, and is saved.
 */
export class TodoLoopContext {
  readonly session_id: string;
  private state: TodoSessionState;
  private readonly completeAfter: number;
  private readonly blockAfter: number;
  /** The work tools called successfully in this run, per item and in all. */
  private readonly calledFor = new Map<number, Set<string>>();
  private readonly called = new Set<string>();

  constructor(private readonly options: TodoLoopOptions) {
    this.session_id = options.session_id;
    this.completeAfter = options.complete_after;
    this.blockAfter = options.block_after;
    const loaded = options.initial === undefined ? options.store?.load(options.session_id) : undefined;
    // An asynchronous store (PostgreSQL) is read by the caller, which passes the list as `initial`.
    if (loaded instanceof Promise) unreachable("a todo list from an asynchronous store must be given as `initial`");
    this.state = options.initial ?? loaded ?? { version: 0, items: [] };
  }

  /** The list as events show it. */
  get items(): TodoItem[] {
    return this.state.items.map(publicItem);
  }

  get version(): number {
    return this.state.version;
  }

  isEmpty(): boolean {
    return this.state.items.length === 0;
  }

  /** A non-empty list whose every item is completed or skipped. */
  allTerminal(): boolean {
    return this.state.items.length > 0 && this.state.items.every((i) => isTerminal(i.status));
  }

  openItems(): TodoItem[] {
    return this.state.items.filter((i) => !isTerminal(i.status)).map(publicItem);
  }

  /** Replace the whole list (write_todos); counters start afresh. */
  replace(drafts: TodoDraft[]): TodoItem[] {
    const items = drafts.map(
      (d, i): TrackedItem => ({
        index: i + 1,
        content: d.content.trim(),
        status: d.status ?? "pending",
        tool_calls_count: 0,
        successes: 0,
        recent_failures: 0,
      }),
    );
    const active = items.find((i) => i.status === "in_progress")?.index;
    this.calledFor.clear();
    this.state = { version: this.state.version, items, ...(active ? { active } : {}) };
    this.changed("list", false);
    return this.items;
  }

  /** A manual status change (update_todo_item); throws TOOL_REFUSED, in words the model can act on, when the task machine forbids it. */
  update(index: number, status: TodoStatus, notes?: string): TodoItem {
    const item = this.state.items[index - 1];
    if (!item) {
      const size = this.state.items.length;
      throw new RuntimeError(
        "TOOL_REFUSED",
        size === 0
          ? `There is no item ${index}: the todo list is empty; create it with write_todos first.`
          : `There is no item ${index}: the list has items 1 to ${size}.`,
      );
    }
    const check = checkTransition(item.status, status);
    if (!check.ok) throw new RuntimeError("TOOL_REFUSED", `Cannot mark item ${index} ${status}: ${check.reason}.`);
    const uncalled = status === "completed" && check.changed ? this.uncalled(item) : [];
    if (uncalled.length > 0) {
      // docs/plan-and-solve.md#verifying: "Compute the area with the calculator" is not done until the calculator ran.
      throw new RuntimeError(
        "TOOL_REFUSED",
        `Cannot mark item ${index} completed: it names ${uncalled.join(", ")}, which has not been called for it. ` +
          `Call ${uncalled.join(", ")} while item ${index} is in progress, or mark the item skipped.`,
      );
    }
    const notesChanged = notes !== undefined && notes !== item.notes;
    if (!check.changed && !notesChanged) return publicItem(item);
    const wasDone = this.allTerminal();
    if (notes !== undefined) item.notes = notes;
    if (check.changed) {
      item.status = status;
      item.successes = 0;
      item.recent_failures = 0;
      if (status === "in_progress") this.state.active = index;
      else if (this.state.active === index) delete this.state.active;
    }
    this.changed("list", wasDone);
    return publicItem(item);
  }

  /**
   * Make sure an item is in progress before a work tool runs: the active
   * one, else the first pending one, which starts (and says so).
   */
  begin(): TodoItem | undefined {
    const active = this.activeItem();
    if (active) return publicItem(active);
    const wasDone = this.allTerminal();
    const started = this.startNextPending();
    if (started) this.changed(started, wasDone);
    return started ? publicItem(started) : undefined;
  }

  /**
   * Attribute one finished non-todo tool call to the active item and apply
   * the heuristics. Returns the item it changed, if any.
   */
  track(ok: boolean, tool?: string): TodoItem | undefined {
    if (ok && tool) this.called.add(tool);
    const item = this.activeItem() ?? this.startNextPending();
    if (!item) return undefined;
    if (ok && tool) this.calledFor.set(item.index, (this.calledFor.get(item.index) ?? new Set()).add(tool));
    const wasDone = this.allTerminal();
    item.tool_calls_count += 1;
    if (ok) {
      item.successes += 1;
      item.recent_failures = 0;
      // An item that names a tool stays in progress until that tool ran for it, however many other calls succeed.
      if (item.successes >= this.completeAfter && this.uncalled(item).length === 0) this.finishActive(item, "completed");
    } else {
      item.recent_failures += 1;
      if (item.recent_failures >= this.blockAfter) this.finishActive(item, "blocked");
    }
    this.changed(item, wasDone);
    return publicItem(item);
  }

  /** The item tool calls are attributed to now, if any (no item starts). */
  current(): TodoItem | undefined {
    const item = this.activeItem();
    return item ? publicItem(item) : undefined;
  }

  /** Items not completed that name a work tool this run never called successfully: what an answer's figures cannot rest on. */
  unbacked(): Array<{ index: number; content: string; tool: string }> {
    return this.state.items
      .filter((i) => i.status !== "completed")
      .flatMap((i) => this.namedTools(i).flatMap((tool) => (this.called.has(tool) ? [] : [{ index: i.index, content: i.content, tool }])));
  }

  /** The work tools an item names that have not run for it in this run. */
  private uncalled(item: TrackedItem): string[] {
    return this.namedTools(item).filter((t) => !this.calledFor.get(item.index)?.has(t));
  }

  /** The work tools an item names, as words of its text. */
  private namedTools(item: TrackedItem): string[] {
    const words = new Set(item.content.toLowerCase().match(/[\p{L}_][\p{L}\p{N}_-]*/gu) ?? []);
    return (this.options.work_tools ?? []).filter((t) => words.has(t.toLowerCase()));
  }

  /** Skip every open item with a note (the run ends with them unfinished). */
  closeOpen(note: string): TodoItem[] {
    const open = this.state.items.filter((i) => !isTerminal(i.status));
    if (open.length === 0) return [];
    const wasDone = this.allTerminal();
    for (const item of open) {
      item.status = "skipped";
      item.notes = item.notes ? `${item.notes}; ${note}` : note;
    }
    delete this.state.active;
    this.changed("list", wasDone);
    return open.map(publicItem);
  }

  /** The list as the system prompt shows it. */
  render(): string {
    if (this.state.items.length === 0) return "(no todo list yet: create one with write_todos)";
    return this.state.items
      .map((i) => {
        const calls = i.tool_calls_count === 1 ? "1 tool call" : `${i.tool_calls_count} tool calls`;
        const notes = i.notes ? ` — ${i.notes}` : "";
        return `${i.index}. ${MARK[i.status]} ${i.content} (${i.status}, ${calls})${notes}`;
      })
      .join("\n");
  }

  private activeItem(): TrackedItem | undefined {
    const items = this.state.items;
    const active = this.state.active ? items[this.state.active - 1] : undefined;
    if (active?.status === "in_progress") return active;
    return items.find((i) => i.status === "in_progress");
  }

  private startNextPending(): TrackedItem | undefined {
    const item = this.state.items.find((i) => i.status === "pending");
    if (!item) return undefined;
    item.status = "in_progress";
    item.successes = 0;
    item.recent_failures = 0;
    this.state.active = item.index;
    return item;
  }

  private finishActive(item: TrackedItem, status: "completed" | "blocked"): void {
    item.status = status;
    if (this.state.active === item.index) delete this.state.active;
  }

  /** Emit the change (the whole list, or one item's progress), then todo.completed if the list just finished. */
  private changed(what: "list" | TrackedItem, wasDone: boolean): void {
    const base = { session_id: this.session_id };
    if (what === "list") this.options.emit({ type: "todo.updated", ...base, version: this.nextVersion(), todos: this.items });
    else this.options.emit({ type: "todo.item_progress", ...base, version: this.nextVersion(), item: publicItem(what) });
    if (!wasDone && this.allTerminal()) {
      this.options.emit({ type: "todo.completed", ...base, version: this.nextVersion(), todos: this.items });
    }
    this.persist();
  }

  /** Save the list to the session store (every change does; StorePlan makes sure). */
  persist(): void {
    if (!this.options.replaying?.()) this.options.store?.save(this.session_id, this.state, this.now());
  }

  private nextVersion(): number {
    // A resumed run rebuilding its list takes the versions it took then, and leaves the store alone.
    const store = this.options.replaying?.() ? undefined : this.options.store;
    this.state.version = store ? store.nextVersion(this.session_id, this.state.version, this.now()) : this.state.version + 1;
    return this.state.version;
  }

  private now(): Date {
    return (this.options.now ?? (() => new Date()))();
  }
}

function publicItem(item: TrackedItem): TodoItem {
  const out: TodoItem = {
    index: item.index,
    content: item.content,
    status: item.status,
    tool_calls_count: item.tool_calls_count,
  };
  if (item.notes !== undefined) out.notes = item.notes;
  return out;
}
