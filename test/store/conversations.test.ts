/**
 * The conversations port (src/store/conversations.ts) on every adapter: a
 * session's turns in the order they ended, its summary of the older ones
 * replaced only by one covering more (docs/sessions.md). The same answers
 * from SQLite and PostgreSQL.
 */
import { describe, expect, it } from "vitest";
import type { Turn } from "../../src/store/conversations.js";
import { adapters } from "../support/store-adapters.js";

const turn = (n: number): Turn => ({ task_id: `task-${n}`, input: `question ${n}`, answer: `answer ${n}`, ts: `2025-03-01T10:00:0${n % 10}.000Z` });

describe.each(adapters())("conversations on $name", (adapter) => {
  it("keeps a session's turns in order, apart from other sessions'; a new session is empty", async () => {
    const store = await adapter.open();
    const conversations = store.conversations();
    expect(await conversations.load("chat")).toEqual({ turns: [], summary: "", through: 0 });
    for (const n of [1, 2, 3]) await conversations.append("chat", turn(n));
    await conversations.append("other", turn(9));
    await conversations.close();
    const later = store.conversations();
    expect(await later.load("chat")).toEqual({ turns: [turn(1), turn(2), turn(3)], summary: "", through: 0 });
    expect((await later.load("other")).turns).toEqual([turn(9)]);
    await later.close();
  });

  it("a summary is replaced only by one covering more turns", async () => {
    const store = await adapter.open();
    const conversations = store.conversations();
    for (const n of [1, 2, 3]) await conversations.append("chat", turn(n));
    await conversations.saveSummary("chat", "first two", 2, new Date());
    expect(await conversations.load("chat")).toMatchObject({ summary: "first two", through: 2 });
    await conversations.saveSummary("chat", "only the first", 1, new Date());
    await conversations.saveSummary("chat", "the first two again", 2, new Date());
    expect(await conversations.load("chat")).toMatchObject({ summary: "first two", through: 2 });
    await conversations.saveSummary("chat", "all three", 3, new Date());
    expect(await conversations.load("chat")).toMatchObject({ summary: "all three", through: 3 });
    await conversations.close();
  });

  it("turns of one session ending together on two handles are all kept, each at its own position", async () => {
    const store = await adapter.open();
    const [a, b] = [store.conversations(), store.conversations()];
    await Promise.all(Array.from({ length: 12 }, (_, n) => (n % 2 ? a : b).append("chat", turn(n))));
    const { turns } = await a.load("chat");
    expect(turns.map((t) => t.task_id).sort()).toEqual(Array.from({ length: 12 }, (_, n) => `task-${n}`).sort());
    await a.close();
    await b.close();
  });
});
