/**
 * Agents using MCP tools in real runs: the real `openai` client against the
 * OpenAI-compatible test server, whose scripted replies call the tools of
 * the filesystem reference server (stdio), our notes server (stdio) and an
 * SDK server over Streamable HTTP.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam, runTeam, type RunEvent } from "../../../src/index.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../../support/openai-server.js";
import { reactReply, tempDir } from "../../support/team.js";
import { FS_SERVER, NOTES_SERVER, newTag, processesWith, startHttpMcpServer, survivors, type HttpMcpServer } from "../../support/mcp-servers.js";

const TOKEN = "calc-token-5f3a9c1e";
const NOTES_TOKEN = "notes-secret-8d2b7e41";

const closing: Array<{ close(): Promise<void> }> = [];
const tags: string[] = [];
afterEach(async () => {
  for (const s of closing.splice(0)) await s.close();
  // A failing test must not leave servers behind.
  for (const pid of tags.splice(0).flatMap(processesWith)) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
});

interface Setup {
  dir: string;
  tag: string;
  model: OpenAIServer;
  http: HttpMcpServer;
}

/** A team in a fresh directory (holding radius.txt) with servers fs, calc and notes, and the given agents. */
async function setup(respond: (body: ChatBody, index: number) => Reply, agents: string, notesArgs = "", moreTools = ""): Promise<Setup & { file: string }> {
  const dir = tempDir("runtime-mcp-run-");
  writeFileSync(join(dir, "radius.txt"), "5\n");
  const tag = newTag();
  tags.push(tag);
  const model = await startOpenAIServer({ respond });
  const http = await startHttpMcpServer({ token: TOKEN });
  closing.push(model, http);
  const file = join(dir, "team.yaml");
  writeFileSync(
    file,
    `version: 1
name: mcp-run
models:
  default: { provider: openai, model: test-model, base_url: "${model.url}", api_key: sk-test-0123456789, max_retries: 0, timeout_ms: 5000 }
tools:
  fs:
    mcp: { command: [node, ${JSON.stringify(FS_SERVER)}, ., "${tag}"], tools: [read_text_file, list_directory] }
  calc:
    mcp: { url: "${http.url}", headers: { Authorization: "Bearer ${TOKEN}" } }
    timeout_ms: 5000
  notes:
    mcp: { command: [node, ${JSON.stringify(NOTES_SERVER)}, "${tag}"${notesArgs}], env: { NOTES_TOKEN: ${NOTES_TOKEN} } }
${moreTools}agents:
${agents}`,
  );
  return { dir, tag, model, http, file };
}

async function run(file: string, input = "What is the radius plus 5?"): Promise<{ events: RunEvent[]; result: Awaited<ReturnType<typeof runTeam>["result"]> }> {
  const team = await loadTeam(file);
  const handle = runTeam(team, { input, traceDir: tempDir("runtime-mcp-trace-") });
  const events: RunEvent[] = [];
  const collecting = (async () => {
    for await (const e of handle.events) events.push(e);
  })();
  const result = await handle.result;
  await collecting;
  return { events, result };
}

const toolCall = (id: string, name: string, args: Record<string, unknown>) => ({ id, name, arguments: args });
const toolNames = (body: ChatBody | undefined): string[] => ((body?.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name);
const toolSpec = (body: ChatBody | undefined, name: string): Record<string, unknown> | undefined =>
  ((body?.tools ?? []) as Array<{ function: Record<string, unknown> & { name: string } }>).find((t) => t.function.name === name)?.function;
const finished = (events: RunEvent[]) => events.flatMap((e) => (e.type === "tool.finished" ? [e] : []));
/** The content of the tool message answering `id` (plan_and_solve transcripts). */
const toolMessage = (body: ChatBody | undefined, id: string): string | undefined => {
  const m = (body?.messages as Array<{ role: string; tool_call_id?: string; content?: unknown }> | undefined)?.find(
    (x) => x.role === "tool" && x.tool_call_id === id,
  );
  return m ? String(m.content) : undefined;
};

describe("a react agent with MCP tools", () => {
  it("is offered the servers' tools, calls them over stdio and HTTP, and answers with their results; no server survives", async () => {
    const s = await setup(
      (body, index) =>
        index === 0
          ? { content: null, tool_calls: [toolCall("r1", "read_text_file", { path: "radius.txt" }), toolCall("a1", "add", { a: 5, b: 5 })] }
          : { content: reactReply("ANSWER", { answer: JSON.stringify(body.messages).includes('\\"sum\\":10') ? "The radius is 5; plus 5 is 10." : "no sum" }) },
      "  solver: { kind: react, tools: [fs, calc] }\n",
    );
    const { events, result } = await run(s.file);
    expect(result).toMatchObject({ result_type: "answer", answer: "The radius is 5; plus 5 is 10." });

    const [first, second] = s.model.chatRequests.map((r) => r.body);
    // The allow-list's two entries became the servers' five tools, with the servers' own descriptions and schemas.
    expect(toolNames(first)).toEqual(["read_text_file", "list_directory", "add", "whoami", "fail"]);
    expect(toolSpec(first, "add")).toMatchObject({
      description: "Add two numbers.",
      parameters: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
    });
    expect(String(toolSpec(first, "read_text_file")?.description)).toMatch(/^Read the complete contents of a file/);
    // The results went back to the model.
    expect(JSON.stringify(second?.messages)).toContain("5\\\\n");
    // The two calls of one reply run at once and may end in either order.
    const byTool = (rows: unknown[][]) => [...rows].sort((x, y) => String(x[0]).localeCompare(String(y[0])));
    expect(byTool(finished(events).map((e) => [e.tool, e.ok, e.result]))).toEqual([
      ["add", true, { sum: 10 }],
      ["read_text_file", true, { content: "5\n" }],
    ]);
    expect(s.http.calls).toEqual(["add"]);
    expect(processesWith(s.tag)).toEqual([]);
  });

  it("arguments that fail the server's schema are refused back to the model, and the server never sees them", async () => {
    const s = await setup(
      (body, index) =>
        index === 0
          ? { content: null, tool_calls: [toolCall("a1", "add", { a: "five", b: 5 })] }
          : { content: reactReply("ANSWER", { answer: JSON.stringify(body.messages).includes("/a must be number") ? "refused as expected" : "?" }) },
      "  solver: { kind: react, tools: [calc] }\n",
    );
    const { events, result } = await run(s.file);
    expect(result.answer).toBe("refused as expected");
    expect(finished(events)[0]).toMatchObject({ tool: "add", ok: false, error: "invalid arguments for add: /a must be number" });
    expect(s.http.calls).toEqual([]);
  });

  it("a server that exits mid-run ends the run at once with how it ended, and nothing is left running", async () => {
    const s = await setup(
      (_body, index) =>
        index === 0 ? { content: null, tool_calls: [toolCall("c1", "crash", {})] } : { content: null, tool_calls: [toolCall("n1", "note", { text: "again" })] },
      "  solver: { kind: react, tools: [notes] }\n",
    );
    const started = Date.now();
    const { events, result } = await run(s.file);
    const message = 'MCP server "notes" exited with code 3 (stderr: notes server: crashing on purpose)';
    expect(result).toMatchObject({ result_type: "error", error: { code: "TOOL_FAILED", message } });
    expect(events.at(-1)).toMatchObject({ type: "run.finished", error: message, error_code: "TOOL_FAILED" });
    expect(Date.now() - started).toBeLessThan(10_000);
    // No model call after the server died.
    expect(s.model.chatRequests).toHaveLength(1);
    expect(finished(events)[0]).toMatchObject({ tool: "crash", ok: false });
    expect(processesWith(s.tag)).toEqual([]);
  });

  it("a server that does not start fails the run in one line, before any model call", async () => {
    const s = await setup(() => ({ content: "unused" }), "  solver: { kind: react, tools: [notes] }\n", ', "--exit-at-start"');
    const { result } = await run(s.file);
    expect(result).toMatchObject({
      result_type: "error",
      error: {
        code: "TOOL_FAILED",
        message:
          'agent solver failed: MCP server "notes" did not start: exited with code 3 (stderr: notes server: cannot open the notes database with token [REDACTED])',
      },
    });
    expect(s.model.chatRequests).toHaveLength(0);
  });

  it("the server's env values and the HTTP headers never reach an event, even when a tool echoes them", async () => {
    const s = await setup(
      (_body, index) =>
        index === 0
          ? { content: null, tool_calls: [toolCall("s1", "secret", {}), toolCall("w1", "whoami", {})] }
          : { content: reactReply("ANSWER", { answer: "done" }) },
      "  solver: { kind: react, tools: [vault, calc] }\n",
      "",
      `  vault:\n    mcp: { command: [node, ${JSON.stringify(NOTES_SERVER)}], env: { NOTES_TOKEN: ${NOTES_TOKEN} }, tools: [secret] }\n`,
    );
    const { events, result } = await run(s.file);
    expect(result.answer).toBe("done");
    const text = JSON.stringify(events);
    expect(finished(events).map((e) => e.ok)).toEqual([true, true]);
    expect(text).not.toContain(NOTES_TOKEN);
    expect(text).not.toContain(TOKEN);
    // The two calls of one reply run at once: find the secret's by its call id, whichever finished first.
    expect(String(finished(events).find((e) => e.call_id === "s1")?.result)).toContain("token is [REDACTED]");
  });

  it("agents of a run share one server process", async () => {
    const s = await setup(
      (_body, index) =>
        [
          { content: null, tool_calls: [toolCall("w1", "whoami", {})] },
          { content: null, tool_calls: [toolCall("h1", "helper", { query: "who are you?" })] },
          { content: null, tool_calls: [toolCall("w2", "whoami", {})] },
          { content: reactReply("ANSWER", { answer: "helper done" }) },
          { content: reactReply("ANSWER", { answer: "lead done" }) },
        ][index] ?? { content: "?" },
      "  lead: { kind: react, tools: [notes, helper] }\n  helper: { kind: react, tools: [notes] }\n",
    );
    const { events, result } = await run(s.file);
    expect(result).toMatchObject({ result_type: "answer", answer: "lead done" });
    const pids = finished(events)
      .filter((e) => e.tool === "whoami")
      .map((e) => (e.result as { pid: number }).pid);
    expect(pids).toHaveLength(2);
    expect(pids[0]).toBe(pids[1]);
    expect(await survivors(pids)).toEqual([]);
  });

  it("two entries offering a tool of the same name are refused, naming both", async () => {
    const s = await setup(
      () => ({ content: "unused" }),
      "  solver: { kind: react, tools: [notes, again] }\n",
      "",
      `  again:\n    mcp: { command: [node, ${JSON.stringify(NOTES_SERVER)}], tools: [whoami] }\n`,
    );
    const { result } = await run(s.file);
    expect(result).toMatchObject({
      result_type: "error",
      error: {
        code: "CONFIG_INVALID",
        message:
          'agent solver failed: agent solver lists two tools named "whoami": MCP server "notes" and MCP server "again"; keep one, or narrow an MCP server with mcp.tools',
      },
    });
    expect(s.model.chatRequests).toHaveLength(0);
    expect(processesWith(s.tag)).toEqual([]);
  });
});

describe("a plan_and_solve agent with MCP tools", () => {
  it("plans, calls the servers' tools between todo updates, and terminates with their results", async () => {
    const calls = (...tool_calls: Array<ReturnType<typeof toolCall>>): Reply => ({ content: null, tool_calls });
    const s = await setup((body, index) => {
      switch (index) {
        case 0:
          return calls(toolCall("p", "write_todos", { todos: [{ content: "Read the radius" }, { content: "Add 5" }] }));
        case 1:
          return calls(toolCall("u1", "update_todo_item", { index: 1, status: "in_progress" }), toolCall("r1", "read_text_file", { path: "radius.txt" }));
        case 2: {
          const radius = Number((JSON.parse(toolMessage(body, "r1") ?? "{}") as { content?: string }).content);
          return calls(
            toolCall("d1", "update_todo_item", { index: 1, status: "completed" }),
            toolCall("u2", "update_todo_item", { index: 2, status: "in_progress" }),
            toolCall("a1", "add", { a: radius, b: 5 }),
          );
        }
        case 3: {
          const sum = (JSON.parse(toolMessage(body, "a1") ?? "{}") as { sum?: number }).sum;
          return calls(toolCall("d2", "update_todo_item", { index: 2, status: "completed" }), toolCall("t", "terminate", { answer: `The sum is ${sum}.` }));
        }
        default:
          return { content: "unexpected" };
      }
    }, "  solver: { kind: plan_and_solve, tools: [write_todos, update_todo_item, fs, calc, terminate] }\n");
    const { events, result } = await run(s.file);
    expect(result).toMatchObject({ result_type: "answer", answer: "The sum is 10." });
    expect(toolNames(s.model.chatRequests[0]?.body)).toEqual([
      "write_todos",
      "update_todo_item",
      "read_text_file",
      "list_directory",
      "add",
      "whoami",
      "fail",
      "terminate",
    ]);
    expect(
      finished(events)
        .filter((e) => e.tool === "read_text_file" || e.tool === "add")
        .map((e) => [e.tool, e.ok]),
    ).toEqual([
      ["read_text_file", true],
      ["add", true],
    ]);
    expect(processesWith(s.tag)).toEqual([]);
  });
});

describe("a plan_solver whose parallel solvers use an MCP server", () => {
  it("the solvers running at once share the one server the run started", async () => {
    const user = (body: ChatBody): string => String((body.messages as Array<{ content?: unknown }> | undefined)?.[0]?.content ?? "");
    const s = await setup(
      (body) => {
        const asked = user(body);
        if (!asked.includes("Your task is task")) return { content: reactReply("ANSWER", { answer: JSON.stringify({ steps: ["Note A", "Note B"] }) }) };
        const task = /Your task is task (\d)/.exec(asked)?.[1] ?? "?";
        if ((body.messages ?? []).length <= 2) return { content: null, tool_calls: [toolCall(`w${task}`, "whoami", {})] };
        const pid = /\\"pid\\":(\d+)/.exec(JSON.stringify(body.messages))?.[1] ?? "none";
        return { content: reactReply("ANSWER", { answer: `task ${task} ran on ${pid}` }) };
      },
      `  pipeline: { kind: plan_solver, planner: planner, solver: solver, concurrency: 2 }
  planner: { kind: react }
  solver: { kind: react, tools: [notes] }
`,
    );
    const { events, result } = await run(s.file, "Note two things.");
    expect(result.error).toBeUndefined();
    expect(result.result_type).toBe("answer");
    const pids = finished(events)
      .filter((e) => e.tool === "whoami")
      .map((e) => (e.result as { pid: number }).pid);
    expect(pids).toHaveLength(2);
    expect(pids[0]).toBe(pids[1]);
    expect(result.answer).toContain(`task 1 ran on ${pids[0]}`);
    expect(result.answer).toContain(`task 2 ran on ${pids[0]}`);
    // Both solvers were in flight at once.
    const solverSteps = events.filter((e) => e.agent_id === "solver" && (e.type === "agent.started" || e.type === "agent.finished")).map((e) => e.type);
    expect(solverSteps.slice(0, 2)).toEqual(["agent.started", "agent.started"]);
    expect(await survivors(pids)).toEqual([]);
  });
});
