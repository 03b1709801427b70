import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEventBody } from "../../../src/events/types.js";
import { checkTransition } from "../../../src/kinds/plan-and-solve/task-machine.js";
import { SqliteTodoSessions as SessionStore } from "../../../src/store/sqlite/todo-sessions.js";
import { TodoLoopContext } from "../../../src/kinds/plan-and-solve/todo-context.js";
import { RuntimeError } from "../../../src/errors.js";
import { reviewPlan, todoTools } from "../../../src/kinds/plan-and-solve/todo-tools.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function context(options: { store?: SessionStore; session?: string; complete_after?: number; block_after?: number } = {}) {
  const events: RunEventBody[] = [];
  const todos = new TodoLoopContext({
    session_id: options.session ?? "s1",
    emit: (e) => events.push(e),
    ...(options.store ? { store: options.store } : {}),
    // The team file's defaults (schemas/team.schema.json: todo_complete_after 3, todo_block_after 2).
    complete_after: options.complete_after ?? 3,
    block_after: options.block_after ?? 2,
  });
  return { todos, events };
}

const versions = (events: RunEventBody[]) => events.map((e) => ("version" in e ? e.version : -1));
const statuses = (todos: TodoLoopContext) => todos.items.map((i) => i.status);

describe("task machine transitions", () => {
  it("allows the diagram's transitions and refuses the rest with a reason", () => {
    expect(checkTransition("pending", "in_progress")).toEqual({ ok: true, changed: true });
    expect(checkTransition("in_progress", "completed").ok).toBe(true);
    expect(checkTransition("in_progress", "failed").ok).toBe(true);
    expect(checkTransition("failed", "in_progress").ok).toBe(true);
    expect(checkTransition("failed", "skipped").ok).toBe(true);
    expect(checkTransition("in_progress", "blocked").ok).toBe(true);
    expect(checkTransition("blocked", "in_progress").ok).toBe(true);
    expect(checkTransition("completed", "completed")).toEqual({ ok: true, changed: false });
    const refused = checkTransition("pending", "completed");
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.reason).toMatch(/mark it in_progress/);
    expect(checkTransition("completed", "in_progress").ok).toBe(false);
    expect(checkTransition("skipped", "in_progress").ok).toBe(false);
    expect(checkTransition("failed", "completed").ok).toBe(false);
    expect(checkTransition("in_progress", "pending").ok).toBe(false);
  });
});

describe("TodoLoopContext", () => {
  it("completes the active item after 3 successes and moves on to the next pending one", () => {
    const { todos, events } = context();
    todos.replace([{ content: "Look up formulas" }, { content: "Compute the area" }]);
    todos.track(true);
    expect(statuses(todos)).toEqual(["in_progress", "pending"]);
    todos.track(true);
    todos.track(true);
    expect(statuses(todos)).toEqual(["completed", "pending"]);
    todos.track(true);
    expect(statuses(todos)).toEqual(["completed", "in_progress"]);
    expect(todos.items[0]?.tool_calls_count).toBe(3);
    const v = versions(events);
    expect(v).toEqual([...v].sort((a, b) => a - b));
    expect(new Set(v).size).toBe(v.length);
    expect(events.map((e) => e.type)).toEqual(["todo.updated", "todo.item_progress", "todo.item_progress", "todo.item_progress", "todo.item_progress"]);
  });

  it("blocks after 2 failures in a row; a success in between resets the count", () => {
    const { todos } = context();
    todos.replace([{ content: "Compute the area" }, { content: "Compute the circumference" }]);
    todos.track(false);
    todos.track(true);
    todos.track(false);
    expect(statuses(todos)).toEqual(["in_progress", "pending"]);
    todos.track(false);
    expect(statuses(todos)).toEqual(["blocked", "pending"]);
  });

  it("honours thresholds from the agent's config", () => {
    const { todos } = context({ complete_after: 1, block_after: 1 });
    todos.replace([{ content: "Compute the area" }, { content: "Compute the circumference" }]);
    todos.track(true);
    todos.track(false);
    expect(statuses(todos)).toEqual(["completed", "blocked"]);
  });

  it("keeps manual updates and the automatic counters in sync", () => {
    const { todos } = context();
    todos.replace([{ content: "Look up formulas" }, { content: "Compute the area" }, { content: "Write the answer" }]);
    todos.track(true);
    todos.track(true);
    // The model finishes item 1 itself after 2 calls: the counters start afresh for item 2.
    todos.update(1, "completed");
    todos.track(true);
    todos.track(true);
    expect(statuses(todos)).toEqual(["completed", "in_progress", "pending"]);
    todos.track(true);
    expect(statuses(todos)).toEqual(["completed", "completed", "pending"]);
    // Confirming what the heuristics did is a no-op, not an error.
    expect(todos.update(2, "completed").status).toBe("completed");
    // A manual start of item 3 then a retry after blocking resets the failure count.
    todos.update(3, "in_progress");
    todos.track(false);
    todos.track(false);
    expect(todos.items[2]?.status).toBe("blocked");
    todos.update(3, "in_progress", "retrying with a simpler expression");
    todos.track(false);
    expect(todos.items[2]?.status).toBe("in_progress");
    todos.update(3, "skipped");
    expect(todos.allTerminal()).toBe(true);
  });

  it("attributes calls to the item marked in_progress by hand, not the first pending one", () => {
    const { todos } = context();
    todos.replace([{ content: "Look up formulas" }, { content: "Compute the area" }]);
    todos.update(2, "in_progress");
    todos.track(true);
    expect(todos.items.map((i) => i.tool_calls_count)).toEqual([0, 1]);
  });

  it("refuses illegal updates with a reason the model can act on", () => {
    const { todos } = context();
    expect(() => todos.update(1, "completed")).toThrow(/todo list is empty/);
    todos.replace([{ content: "Look up formulas" }]);
    expect(() => todos.update(1, "completed")).toThrow(RuntimeError);
    expect(() => todos.update(1, "completed")).toThrow(expect.objectContaining({ code: "TOOL_REFUSED" }));
    expect(() => todos.update(1, "completed")).toThrow(/still pending: mark it in_progress/);
    expect(() => todos.update(3, "in_progress")).toThrow(/items 1 to 1/);
  });

  it("emits todo.completed once when the last item becomes terminal", () => {
    const { todos, events } = context({ complete_after: 1 });
    todos.replace([{ content: "Look up formulas" }, { content: "Compute the area" }]);
    todos.track(true);
    todos.track(true);
    expect(events.filter((e) => e.type === "todo.completed")).toHaveLength(1);
    expect(events.at(-1)?.type).toBe("todo.completed");
    expect(todos.track(true)).toBeUndefined();
  });

  it("closes open items as skipped with a note", () => {
    const { todos } = context();
    todos.replace([{ content: "Look up formulas", status: "completed" }, { content: "Compute the area" }]);
    const closed = todos.closeOpen("skipped: run ended");
    expect(closed.map((i) => i.index)).toEqual([2]);
    expect(todos.items[1]).toMatchObject({ status: "skipped", notes: "skipped: run ended" });
  });

  it("persists the list and its version per session in SQLite", () => {
    const dir = mkdtempSync(join(tmpdir(), "pas-"));
    dirs.push(dir);
    const store = new SessionStore(dir);
    const first = context({ store, session: "chat-1" });
    first.todos.replace([{ content: "Look up formulas" }, { content: "Compute the area" }]);
    first.todos.track(true);
    store.close();

    const reopened = new SessionStore(dir);
    const second = context({ store: reopened, session: "chat-1" });
    expect(second.todos.items.map((i) => i.status)).toEqual(["in_progress", "pending"]);
    second.todos.track(true);
    second.todos.track(true);
    expect(second.todos.items[0]?.status).toBe("completed");
    expect(versions(second.events)[0]).toBeGreaterThan(first.todos.version);
    expect(context({ store: reopened, session: "other" }).todos.isEmpty()).toBe(true);
    reopened.close();
  });

  it("never hands out the same version twice when two runs share a session", () => {
    const dir = mkdtempSync(join(tmpdir(), "pas-"));
    dirs.push(dir);
    const storeA = new SessionStore(dir);
    const storeB = new SessionStore(dir);
    const a = context({ store: storeA, session: "shared" });
    const b = context({ store: storeB, session: "shared" });
    a.todos.replace([{ content: "Compute the area" }]);
    b.todos.replace([{ content: "Compute the circumference" }]);
    a.todos.track(true);
    b.todos.track(true);
    const all = [...versions(a.events), ...versions(b.events)];
    expect(new Set(all).size).toBe(all.length);
    expect(versions(a.events)).toEqual([1, 3]);
    expect(versions(b.events)).toEqual([2, 4]);
    storeA.close();
    storeB.close();
  });

  it("renders the list for the prompt", () => {
    const { todos } = context();
    expect(todos.render()).toMatch(/no todo list yet/);
    todos.replace([{ content: "Look up formulas" }, { content: "Compute the area" }]);
    todos.track(true);
    expect(todos.render()).toBe("1. [>] Look up formulas (in_progress, 1 tool call)\n2. [ ] Compute the area (pending, 0 tool calls)");
  });
});

describe("todo tools", () => {
  it("write_todos, update_todo_item and validate_plan act on the bound context", async () => {
    const { todos } = context();
    const tools = new Map(todoTools(todos).map((t) => [t.name, t]));
    const ctx = { signal: new AbortController().signal, scope: { agent_id: "a" }, emit: () => {}, call_id: "c" };
    await tools.get("create_todo_list")!.execute({ todos: [{ content: "Compute the area" }] }, ctx);
    expect(todos.items).toHaveLength(1);
    await expect(tools.get("update_todo_item")!.execute({ index: 1, status: "completed" }, ctx)).rejects.toThrow(/mark it in_progress/);
    const review = (await tools.get("validate_plan")!.execute({}, ctx)) as { valid: boolean };
    expect(review.valid).toBe(true);
  });

  it("validate_plan says what to fix", () => {
    const item = (index: number, content: string) => ({ index, content, status: "pending" as const, tool_calls_count: 0 });
    expect(reviewPlan([]).problems[0]).toMatch(/empty/);
    const many = Array.from({ length: 21 }, (_, i) => item(i + 1, `Compute value number ${i + 1}`));
    expect(reviewPlan(many).problems[0]).toMatch(/at most 20/);
    const review = reviewPlan([
      item(1, "Compute the area"),
      item(2, "compute the area."),
      item(3, "What is pi?"),
      item(4, "ok"),
      item(5, "The circumference value"),
    ]);
    expect(review.valid).toBe(false);
    expect(review.problems).toEqual([
      expect.stringMatching(/Items 1 and 2 say the same thing/),
      expect.stringMatching(/Item 3 is a question/),
      expect.stringMatching(/Item 4 .* too short/),
      expect.stringMatching(/Item 5 does not start with a verb/),
    ]);
  });
});

describe("an item that names a tool", () => {
  it("is completed, by hand or automatically, only once that tool ran for it", () => {
    const todos = new TodoLoopContext({ session_id: "s1", emit: () => {}, complete_after: 2, block_after: 2, work_tools: ["calculator", "knowledge_lookup"] });
    todos.replace([{ content: "Compute the area with the calculator" }, { content: "Write the answer" }]);
    todos.begin();
    // Two lookups succeed: enough for the heuristics, not for an item that names the calculator.
    todos.track(true, "knowledge_lookup");
    todos.track(true, "knowledge_lookup");
    expect(statuses(todos)).toEqual(["in_progress", "pending"]);
    expect(() => todos.update(1, "completed")).toThrow(/^Cannot mark item 1 completed: it names calculator, which has not been called for it/);
    expect(todos.unbacked()).toEqual([{ index: 1, content: "Compute the area with the calculator", tool: "calculator" }]);
    todos.track(true, "calculator");
    expect(statuses(todos)).toEqual(["completed", "pending"]);
    expect(todos.unbacked()).toEqual([]);
  });
});
