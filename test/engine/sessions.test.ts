/**
 * Memory across turns (docs/sessions.md): a run in a named session sees the
 * session's earlier requests and answers; past a budget the older turns
 * are summarised once by the agent's model; runs are listed by session.
 * On SQLite and on PostgreSQL, against the OpenAI-compatible test server.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam, type RunOptions } from "../../src/engine/run-team.js";
import { createStore } from "../../src/store/create.js";
import type { Store } from "../../src/store/store.js";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { usePostgres } from "../support/postgres.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

vi.setConfig({ testTimeout: 60_000, hookTimeout: 60_000 });

const postgres = usePostgres();
const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const userText = (body: ChatBody) => String((body.messages as { role: string; content: string }[]).find((m) => m.role === "user")?.content ?? "");

/** A model that answers with what it was told: the name in the conversation, if any. */
async function rememberingModel(): Promise<OpenAIServer> {
  const server = await startOpenAIServer({
    respond: (body): Reply => {
      const text = userText(body);
      if (text.startsWith("Summarise this conversation")) return { content: `SUMMARY: the user is ${/my name is (\w+)/i.exec(text)?.[1] ?? "unknown"}` };
      const name = /my name is (\w+)/i.exec(text)?.[1] ?? /SUMMARY: the user is (\w+)/.exec(text)?.[1];
      const answer = /what is my name/i.test(text)
        ? name
          ? `Your name is ${name}.`
          : "I do not know your name."
        : `Noted. ${"x".repeat(Number(/pad=(\d+)/.exec(text)?.[1] ?? 0))}`;
      return { content: reactReply("ANSWER", { answer }) };
    },
  });
  servers.push(server);
  return server;
}

function team(url: string, kind: "react" | "plan_and_solve"): string {
  return writeTeam(`version: 1
name: memory
models:
  default: { provider: openai, model: m, base_url: "${url}", api_key: sk-memory-0123456789, max_retries: 0 }
agents:
  assistant:
    kind: ${kind}
    tools: [terminate]
`);
}

async function ask(file: string, input: string, options: Partial<RunOptions>): Promise<string | undefined> {
  const run = runTeam(await loadTeam(file), { input, traceDir: tempDir(), ...options });
  const result = await run.result;
  expect(result.result_type).toBe("answer");
  return result.answer;
}

describe.each(["sqlite", "postgres"])("sessions on %s", (kind) => {
  let store: Store;
  beforeAll(async () => {
    store = await createStore(kind === "postgres" ? await postgres.createDatabase("sessions") : tempDir("sessions-store-"));
  });
  afterAll(() => store?.close());

  it("a second react run of a session remembers the first; another session and a run without one do not", async () => {
    const model = await rememberingModel();
    const file = team(model.url, "react");
    await ask(file, "Hello, my name is Ada.", { store, sessionId: "chat-ada" });
    expect(await ask(file, "What is my name?", { store, sessionId: "chat-ada" })).toBe("Your name is Ada.");
    expect(await ask(file, "What is my name?", { store, sessionId: "chat-other" })).toBe("I do not know your name.");
    expect(await ask(file, "What is my name?", { store })).toBe("I do not know your name.");
    // The request carried the earlier turn before the new one.
    const second = userText(model.chatRequests[1]!.body as ChatBody);
    expect(second).toMatch(/Earlier in this conversation:\nUser: Hello, my name is Ada\.\nAssistant: Noted\. \n\nCurrent request:\nWhat is my name\?$/);

    const runs = await store.runs.listRuns({ session: "chat-ada" });
    expect(runs.map((r) => r.input)).toEqual(["What is my name?", "Hello, my name is Ada."]);
  });

  it("plan_and_solve remembers too", async () => {
    const model = await rememberingModel();
    const file = team(model.url, "plan_and_solve");
    await ask(file, "Hello, my name is Grace.", { store, sessionId: "chat-grace" });
    const requests = model.chatRequests.length;
    await ask(file, "What is my name?", { store, sessionId: "chat-grace" });
    const later = model.chatRequests.slice(requests).map((r) => userText(r.body as ChatBody));
    expect(later[0]).toContain("User: Hello, my name is Grace.");
  });

  it("past the budget, older turns are summarised once by the model and the summary is kept", async () => {
    const model = await rememberingModel();
    const file = team(model.url, "react");
    await ask(file, "Hello, my name is Linus.", { store, sessionId: "chat-long" });
    for (let i = 0; i < 3; i++) await ask(file, `Turn ${i}, pad=2500`, { store, sessionId: "chat-long" });
    const before = model.chatRequests.length;
    expect(await ask(file, "What is my name?", { store, sessionId: "chat-long" })).toBe("Your name is Linus.");
    const asked = model.chatRequests.slice(before).map((r) => userText(r.body as ChatBody));
    expect(asked.filter((t) => t.startsWith("Summarise this conversation"))).toHaveLength(1);
    const request = asked.find((t) => t.includes("Current request:"))!;
    expect(request).toContain("Summary of the earlier conversation:\nSUMMARY: the user is Linus");
    expect(request.length).toBeLessThan(9_000);
    // The next run reuses the stored summary: no new summary call for turns already folded.
    const next = model.chatRequests.length;
    await ask(file, "Thanks, pad=10", { store, sessionId: "chat-long" });
    expect(
      model.chatRequests
        .slice(next)
        .map((r) => userText(r.body as ChatBody))
        .filter((t) => t.startsWith("Summarise")),
    ).toHaveLength(0);
  });
});

describe("a conversation the caller gives (RunOptions.history)", () => {
  it("is read as a session's turns, summarised past the budget for that run only, and never stored", async () => {
    const model = await rememberingModel();
    const file = team(model.url, "react");
    const store = await createStore(tempDir("history-store-"));
    try {
      await ask(file, "Hello, my name is Edsger.", { store, sessionId: "stored" });
      // Given, the history stands instead of the session's stored turns.
      const given = [{ input: "Hello, my name is Barbara.", answer: "Noted." }];
      expect(await ask(file, "What is my name?", { store, sessionId: "stored", history: given })).toBe("Your name is Barbara.");
      expect(await ask(file, "What is my name?", { store, history: given })).toBe("Your name is Barbara.");
      // Past the budget: one summary call, whose summary no session keeps.
      const long = [...given, ...Array.from({ length: 3 }, (_, i) => ({ input: `Turn ${i}`, answer: "y".repeat(2500) }))];
      const before = model.chatRequests.length;
      expect(await ask(file, "What is my name?", { store, sessionId: "stored", history: long })).toBe("Your name is Barbara.");
      const asked = model.chatRequests.slice(before).map((r) => userText(r.body as ChatBody));
      expect(asked.filter((t) => t.startsWith("Summarise this conversation"))).toHaveLength(1);
      const conversations = store.conversations();
      try {
        const stored = await conversations.load("stored");
        expect(stored.summary).toBe("");
        expect(stored.turns.map((t) => t.input)).toEqual(["Hello, my name is Edsger.", "What is my name?", "What is my name?"]);
      } finally {
        await conversations.close();
      }
    } finally {
      await store.close();
    }
  });
});

describe("sessions from the command line", () => {
  it("exec --session carries the conversation; trace --session lists the session's runs", async () => {
    const model = await rememberingModel();
    const file = team(model.url, "react");
    const traces = tempDir("session-cli-");
    expect((await runCli(["exec", file, "Hi, my name is Alan.", "--session", "s-1", "--trace-dir", traces, "--no-progress"])).code).toBe(0);
    const second = await runCli(["exec", file, "What is my name?", "--session", "s-1", "--trace-dir", traces, "--no-progress"]);
    expect(second.stdout.trim()).toBe("Your name is Alan.");
    await runCli(["exec", file, "What is my name?", "--trace-dir", traces, "--no-progress"]);
    const listed = await runCli(["trace", "--session", "s-1", "--json", "--trace-dir", traces]);
    expect(
      listed.stdout
        .trim()
        .split("\n")
        .map((l) => (JSON.parse(l) as { input: string }).input),
    ).toEqual(["What is my name?", "Hi, my name is Alan."]);
    const none = await runCli(["trace", "--session", "nope", "--trace-dir", traces]);
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("no runs in session nope");
  });
});
