/**
 * The todo sessions port (src/store/todo-sessions.ts) on every adapter: a
 * session's list kept between runs, its versions counted upwards and never
 * lowered (docs/scale-out.md#stores). The same answers from SQLite and
 * PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import type { TodoSessionState } from "../../src/store/todo-sessions.js";
import { adapters } from "../support/store-adapters.js";

const NOW = new Date("2025-03-01T10:00:00.000Z");
const item = (index: number, status: "pending" | "in_progress" | "completed") => ({
  index,
  content: `item ${index}`,
  status,
  tool_calls_count: 0,
  successes: 0,
  recent_failures: 0,
});

describe.each(adapters())("todo sessions on $name", (adapter) => {
  it("a list saved by one run is what the next run of the session loads; other sessions are apart", async () => {
    const store = await adapter.open();
    const first = store.todoSessions();
    expect(await first.load("chat")).toBeUndefined();
    const state: TodoSessionState = { version: 2, items: [item(1, "completed"), item(2, "in_progress")], active: 2 };
    first.save("chat", state, NOW);
    first.save("other", { version: 1, items: [item(1, "pending")] }, NOW);
    await first.close();
    const next = store.todoSessions();
    expect(await next.load("chat")).toEqual(state);
    expect(await next.load("other")).toEqual({ version: 1, items: [item(1, "pending")] });
    expect(await next.load("nobody")).toBeUndefined();
    await next.close();
  });

  it("hands out versions above the floor and above every version handed out or stored before", async () => {
    const store = await adapter.open();
    const sessions = store.todoSessions();
    expect(sessions.nextVersion("chat", 0, NOW)).toBe(1);
    expect(sessions.nextVersion("chat", 0, NOW)).toBe(2);
    expect(sessions.nextVersion("chat", 10, NOW)).toBe(11);
    sessions.save("chat", { version: 11, items: [item(1, "pending")] }, NOW);
    await sessions.close();
    const later = store.todoSessions();
    await later.load("chat");
    expect(later.nextVersion("chat", 0, NOW)).toBe(12);
    await later.close();
  });

  it("a save with a lower version keeps the list it brings and the highest version", async () => {
    const store = await adapter.open();
    const a = store.todoSessions();
    a.save("chat", { version: 5, items: [item(1, "completed")] }, NOW);
    a.save("chat", { version: 3, items: [item(1, "in_progress"), item(2, "pending")] }, NOW);
    await a.close();
    const b = store.todoSessions();
    expect(await b.load("chat")).toEqual({ version: 5, items: [item(1, "in_progress"), item(2, "pending")] });
    await b.close();
  });
});
