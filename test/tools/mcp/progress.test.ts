/**
 * What an MCP server reports while a call runs (docs/mcp.md#progress-and-log-messages),
 * and tools that require MCP tasks (docs/mcp.md#tools-that-require-tasks): real
 * runs of a react agent (the real `openai` client against the OpenAI-compatible
 * test server) calling the everything reference server and our notes server
 * over stdio; the events are read back from the run's trace.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam, runTeam, type RunEvent } from "../../../src/index.js";
import { sqliteStore } from "../../../src/store/sqlite/store.js";
import { startOpenAIServer, type ChatBody, type Reply } from "../../support/openai-server.js";
import { reactReply, tempDir } from "../../support/team.js";
import { EVERYTHING_SERVER, NOTES_SERVER, newTag, processesWith } from "../../support/mcp-servers.js";

const NOTES_TOKEN = "notes-secret-3c9e1a77";

const closing: Array<{ close(): Promise<void> }> = [];
const tags: string[] = [];
afterEach(async () => {
  for (const s of closing.splice(0)) await s.close();
  for (const pid of tags.splice(0).flatMap(processesWith)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
});

const toolCall = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });
const toolNames = (body: ChatBody | undefined): string[] => ((body?.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);

/** Run a react agent with tools `everything` and `notes` whose model replies `respond`; the run's result and its traced events. */
async function run(respond: (body: ChatBody, index: number) => Reply, timeout_ms = 15_000) {
  const dir = tempDir("runtime-mcp-progress-");
  const tag = newTag();
  tags.push(tag);
  const model = await startOpenAIServer({ respond });
  closing.push(model);
  const file = join(dir, "team.yaml");
  writeFileSync(
    file,
    `version: 1
name: mcp-progress
models:
  default: { provider: openai, model: test-model, base_url: "${model.url}", api_key: sk-test-0123456789, max_retries: 0, timeout_ms: 5000 }
tools:
  everything:
    mcp: { command: [node, ${JSON.stringify(EVERYTHING_SERVER)}, stdio, "${tag}"], tools: [trigger-long-running-operation, simulate-research-query, echo] }
    timeout_ms: ${timeout_ms}
  notes:
    mcp: { command: [node, ${JSON.stringify(NOTES_SERVER)}, "${tag}"], env: { NOTES_TOKEN: ${NOTES_TOKEN} }, tools: [log, note] }
agents:
  solver: { kind: react, tools: [everything, notes] }
`,
  );
  const traceDir = tempDir("runtime-mcp-progress-trace-");
  const handle = runTeam(await loadTeam(file), { input: "go", traceDir });
  const result = await handle.result;
  const store = sqliteStore(traceDir);
  const events = await store.runs.eventsOfTask(result.task_id);
  await store.close();
  expect(processesWith(tag)).toEqual([]);
  return { result, events, model };
}

const progressOf = (events: RunEvent[], call_id: string) =>
  events.flatMap((e) =>
    e.type === "tool.progress" && e.call_id === call_id ? [{ tool: e.tool, message: e.message, progress: e.progress, total: e.total }] : [],
  );
const finishedOf = (events: RunEvent[], call_id: string) => events.find((e) => e.type === "tool.finished" && e.call_id === call_id);

describe("an MCP server's progress and log notifications", () => {
  it("become tool.progress events of the call, between its tool.started and tool.finished", async () => {
    const { result, events } = await run((_body, index) =>
      index === 0
        ? { content: null, tool_calls: [toolCall("p1", "trigger-long-running-operation", { duration: 0.4, steps: 4 })] }
        : { content: reactReply("ANSWER", { answer: "done" }) },
    );
    expect(result).toMatchObject({ result_type: "answer", answer: "done" });
    expect(progressOf(events, "p1")).toEqual(
      [1, 2, 3, 4].map((progress) => ({ tool: "trigger-long-running-operation", message: undefined, progress, total: 4 })),
    );
    const types = events.filter((e) => "call_id" in e && e.call_id === "p1").map((e) => e.type);
    expect(types).toEqual(["tool.started", "tool.progress", "tool.progress", "tool.progress", "tool.progress", "tool.finished"]);
    expect(finishedOf(events, "p1")).toMatchObject({ ok: true, result: expect.stringContaining("Long running operation completed") });
  });

  it("log messages at info and above reach the call; the server's env values are masked", async () => {
    const { events } = await run((_body, index) =>
      index === 0 ? { content: null, tool_calls: [toolCall("l1", "log", {})] } : { content: reactReply("ANSWER", { answer: "done" }) },
    );
    expect(progressOf(events, "l1").map((p) => p.message)).toEqual(["notes info: opened with token [REDACTED]", 'warning: {"rows":3}']);
    expect(JSON.stringify(events)).not.toContain(NOTES_TOKEN);
    expect(finishedOf(events, "l1")).toMatchObject({ ok: true, result: "logged" });
  });
});

describe("a tool that requires MCP tasks", () => {
  it("is offered to the model and called as a task: its status messages are progress, its report the result", async () => {
    const { result, events, model } = await run((body, index) =>
      index === 0
        ? { content: null, tool_calls: [toolCall("t1", "simulate-research-query", { topic: "tides" })] }
        : { content: reactReply("ANSWER", { answer: JSON.stringify(body.messages).includes("Research Report: tides") ? "reported" : "no report" }) },
    );
    expect(toolNames(model.chatRequests[0]?.body)).toContain("simulate-research-query");
    expect(result).toMatchObject({ result_type: "answer", answer: "reported" });
    const messages = progressOf(events, "t1").map((p) => p.message);
    expect(messages[0]).toMatch(/^task \S+ working$/);
    // The SDK polls at the server's pollInterval (1 s, as long as a stage): each stage seen is reported once, in order, and nothing else.
    const stages = ["Gathering sources...", "Analyzing content...", "Synthesizing findings...", "Generating report..."];
    const seen = messages.slice(1);
    expect(seen.length).toBeGreaterThan(0);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(stages.filter((s) => seen.includes(s)));
    expect(finishedOf(events, "t1")).toMatchObject({ ok: true, result: expect.stringContaining("# Research Report: tides") });
  });

  it("a task still working when the call times out is the call's error, said in one line", async () => {
    const { result, events } = await run(
      (body, index) =>
        index === 0
          ? { content: null, tool_calls: [toolCall("t1", "simulate-research-query", { topic: "tides" })] }
          : { content: reactReply("ANSWER", { answer: JSON.stringify(body.messages).includes("timed out after 1500 ms") ? "timed out" : "?" }) },
      1500,
    );
    expect(result).toMatchObject({ result_type: "answer", answer: "timed out" });
    expect(finishedOf(events, "t1")).toMatchObject({ ok: false, error: "timed out after 1500 ms" });
  });
});
