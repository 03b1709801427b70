import { fileURLToPath } from "node:url";
import { expect } from "vitest";
import { loadTeam, runTeam, type RunEvent, type TodoItem } from "../../src/index.js";
import type { ChatBody, MessageReply, ReplyToolCall } from "./openai-server.js";
import { tempDir, writeTeam } from "./team.js";

const LOOKUP = fileURLToPath(new URL("../../teams/tools/lookup.mjs", import.meta.url));

/** A plan_and_solve team on the test server; `agent` lines are appended to the agent. */
export function planTeam(url: string, agent = "", tools = "write_todos, update_todo_item, validate_plan, calculator, knowledge_lookup, terminate"): string {
  return writeTeam(`version: 1
name: pas-test
models:
  default:
    provider: openai
    model: test-model
    base_url: ${url}
    api_key: test-key
    max_retries: 0
    timeout_ms: 5000
tools:
  knowledge_lookup:
    command: [node, ${JSON.stringify(LOOKUP)}]
    description: Look up a formula by topic.
    parameters:
      type: object
      properties: { topic: { type: string } }
      required: [topic]
    timeout_ms: 5000
agents:
  solver:
    kind: plan_and_solve
    tools: [${tools}]
${agent}`);
}

export interface PlanRun {
  events: RunEvent[];
  result: Awaited<ReturnType<typeof runTeam>["result"]>;
}

/** Run the team's entry agent to its end, collecting every event. */
export async function runPlan(file: string, input: string, options: { traceDir?: string; sessionId?: string } = {}): Promise<PlanRun> {
  const team = await loadTeam(file);
  const run = runTeam(team, {
    input,
    traceDir: options.traceDir ?? tempDir(),
    ...(options.sessionId ? { sessionId: options.sessionId } : {}),
  });
  const events: RunEvent[] = [];
  const collecting = (async () => {
    for await (const e of run.events) events.push(e);
  })();
  const result = await run.result;
  await collecting;
  return { events, result };
}

export const call = (id: string, name: string, args: Record<string, unknown> | string): ReplyToolCall => ({
  id,
  name,
  arguments: args,
});

export const calls = (...tool_calls: ReplyToolCall[]): MessageReply => ({ content: null, tool_calls });

export const todos = (...contents: string[]) => ({ todos: contents.map((content) => ({ content })) });

/** Every state a machine walked, in order: each state.changed's `via` (the transient states passed through), then its `to`. */
export function walked(events: RunEvent[], machine?: string): string[] {
  return events.flatMap((e) => (e.type === "state.changed" && (machine === undefined || e.machine === machine) ? [...(e.via ?? []), e.to] : []));
}

/** The top-level states the lifecycle machine went through, in order, without repeats in a row. */
export function topLevel(events: RunEvent[]): string[] {
  const out: string[] = [];
  for (const state of walked(events, "plan_and_solve")) {
    const top = state.split(".")[0] ?? "";
    if (out.at(-1) !== top) out.push(top);
  }
  return out;
}

/** Every todo event's version, in emission order. */
export function todoVersions(events: RunEvent[]): number[] {
  return events.flatMap((e) => (e.type === "todo.updated" || e.type === "todo.item_progress" || e.type === "todo.completed" ? [e.version] : []));
}

/** The todo list as the last whole-list event showed it, with item progress applied. */
export function finalTodos(events: RunEvent[]): TodoItem[] {
  let list: TodoItem[] = [];
  for (const e of events) {
    if (e.type === "todo.updated" || e.type === "todo.completed") list = e.todos;
    if (e.type === "todo.item_progress") list = list.map((i) => (i.index === e.item.index ? e.item : i));
  }
  return list;
}

export function expectStrictlyIncreasing(values: number[]): void {
  expect(values.length).toBeGreaterThan(0);
  values.slice(1).forEach((v, i) => {
    expect(v).toBeGreaterThan(values[i] as number);
  });
}

type Message = Record<string, unknown> & { role?: string };

/**
 * The request layout `[system, user, assistant, tool, ...]`, and every
 * assistant tool call answered by a tool message before the next assistant
 * message, with no tool message answering nothing.
 */
export function expectWellFormed(bodies: (ChatBody | undefined)[]): void {
  expect(bodies.length).toBeGreaterThan(0);
  for (const body of bodies) {
    const messages = (body?.messages ?? []) as Message[];
    expect(messages[0]?.role).toBe("system");
    expect(messages[1]?.role).toBe("user");
    expect(messages.filter((m) => m.role === "system")).toHaveLength(1);
    let owed = new Set<string>();
    for (const m of messages.slice(2)) {
      if (m.role === "assistant") {
        expect(owed.size, `unanswered tool calls before an assistant message: ${[...owed].join(", ")}`).toBe(0);
        owed = new Set(((m.tool_calls ?? []) as { id: string }[]).map((c) => c.id));
      } else if (m.role === "tool") {
        const id = String(m.tool_call_id);
        expect(owed.has(id), `tool message ${id} answers no open call`).toBe(true);
        owed.delete(id);
      } else {
        expect(m.role).toBe("user");
        expect(owed.size, "a user message before every call was answered").toBe(0);
      }
    }
    // The last request may only end with calls answered: the model is asked after the results.
    expect(owed.size).toBe(0);
  }
}

/** The content of the tool message answering `id` in a request. */
export function toolResult(body: ChatBody | undefined, id: string): string | undefined {
  const m = (body?.messages as Message[] | undefined)?.find((x) => x.role === "tool" && x.tool_call_id === id);
  return m ? String(m.content) : undefined;
}

export function systemPrompt(body: ChatBody | undefined): string {
  return String((body?.messages as Message[] | undefined)?.[0]?.content ?? "");
}
