/**
 * Guardrails that see what the model sees (issue 47; docs/guardrails.md,
 * docs/security.md#guardrails): the look-alike spellings that walked around
 * `deny` and `pii` are blocked or masked in every event and view of a run:
 * the NDJSON and terminal output of `runtime exec`, the stored trace and its
 * page, `POST /v1/runs` and `GET /v1/runs/:id`, the OpenAI-compatible chat
 * and Responses endpoints (an injection in an earlier message, an assistant
 * turn, an earlier input item), A2A (a part) and `runtime mcp`. The model is
 * the project's OpenAI-compatible test server, streaming in 4-character
 * deltas, so a match is split across `llm.delta` events.
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { TaskState, type Task } from "@a2a-js/sdk";
import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { a2aClient, userMessage } from "../support/a2a.js";
import { BIN, runCli } from "../support/cli.js";
import { DENIED_PATTERN, INJECTION_PATTERN, INPUT_VARIANTS, OUTPUT_CONTROLS, OUTPUT_VARIANTS } from "../support/look-alikes.js";
import { startOpenAIServer, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { postRun, serveTeam } from "../support/runtime-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

// Spawns the built CLI: run `npm run build` first (npm test does).
const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

const LEAKS = Object.values(OUTPUT_VARIANTS).map((v) => v.leak);
/** The answer the model gives when asked for details: every variant, and the plain controls. */
const DETAILS = `Dear customer, ${Object.values(OUTPUT_VARIANTS)
  .map((v) => v.text)
  .join(", then ")}; also ${OUTPUT_CONTROLS.caught.join(", ")}; kept: ${OUTPUT_CONTROLS.left.join(", ")}.`;
const MASKED_COUNT = Object.keys(OUTPUT_VARIANTS).length + OUTPUT_CONTROLS.caught.length;
/** The arguments of the model's first call: a card in Arabic-Indic digits, masked by the tool_input guardrail. */
const SAVED = { text: "card ٤١١١ ١١١١ ١١١١ ١١١١" };

const answer = (text: string): Reply => ({ content: reactReply("ANSWER", { answer: text }) });

/** Asked "Details?", the model saves a note and answers with the variants; asked anything else, it answers "fine". */
function model(): Promise<OpenAIServer> {
  return startOpenAIServer({
    respond: (body) => {
      const said = JSON.stringify(body.messages);
      if (!said.includes("Details?")) return answer("fine");
      if (said.includes("saved")) return answer(DETAILS);
      return { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "call_1", name: "save", arguments: JSON.stringify(SAVED) }] };
    },
  });
}

function team(url: string): string {
  return writeTeam(`version: 1
name: guarded
models:
  default: { provider: openai, model: test-model, base_url: "${url}", api_key: sk-test, max_retries: 0, timeout_ms: 20000 }
tools:
  save:
    description: Saves a text.
    command: [node, -e, "process.stdin.resume();process.stdin.on('end',()=>console.log('saved'))"]
    parameters: { type: object, properties: { text: { type: string } }, required: [text] }
guardrails:
  - { name: no-injection, on: input, deny: ["${INJECTION_PATTERN}"] }
  - { name: no-personal-data, on: output, pii: [email, phone, credit_card, iban], action: redact }
  - { name: no-codename, on: output, deny: ["${DENIED_PATTERN}"], action: redact }
  - { name: no-cards-saved, on: tool_input, tools: [save], pii: [credit_card], action: redact }
agents:
  solver: { kind: react, tools: [save] }
`);
}

/** Fails naming the variant whose text shows in `text` (`where` says which view). */
function expectMasked(text: string, where: string): void {
  for (const leak of [...LEAKS, "٤١١١ ١١١١"]) expect(text.includes(leak), `${where} shows ${JSON.stringify(leak)}`).toBe(false);
  expect(text, where).toContain("[REDACTED]");
}

type Event = { type: string; text?: string; answer?: string; task_id?: string };

describe("an answer's look-alike personal data and denied words, in every view of the run", { timeout: 180_000 }, () => {
  let m: OpenAIServer;
  let file: string;
  beforeAll(async () => {
    m = await model();
    file = team(m.url);
  });
  afterAll(() => m.close());
  const traces = () => join(file, "..", "traces");

  it("runtime exec: NDJSON events (llm.delta, llm.response, tool events), the terminal, the stored trace and its page", async () => {
    const run = await runCli(["exec", file, "Details?", "--trace-dir", traces(), "--events", "ndjson"], { cwd: join(file, ".."), timeoutMs: 60_000 });
    expect(run.code, run.stderr).toBe(0);
    const events = run.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as Event);
    const finished = events.find((e) => e.type === "run.finished");
    expect(finished?.answer?.split("[REDACTED]")).toHaveLength(MASKED_COUNT + 1);
    expect(finished?.answer).toContain(`kept: ${OUTPUT_CONTROLS.left.join(", ")}.`);
    // The reply streamed in pieces, masked: the deltas add up to the masked reply.
    const deltas = events.filter((e) => e.type === "llm.delta");
    expect(deltas.length).toBeGreaterThan(2);
    expectMasked(deltas.map((d) => d.text).join(""), "the llm.delta events");
    expectMasked(run.stdout, "runtime exec --events ndjson");

    const taskId = finished?.task_id ?? "";
    const stored = await runCli(["trace", taskId, "--json", "--trace-dir", traces()]);
    expect(stored.code, stored.stderr).toBe(0);
    expect(stored.stdout).toContain('"llm.delta"');
    expectMasked(stored.stdout, "the stored trace");
    const page = await runCli(["trace", taskId, "--html", "-", "--trace-dir", traces()]);
    expect(page.code, page.stderr).toBe(0);
    expect(page.stdout).toContain("Dear customer");
    expectMasked(page.stdout, "the trace page");

    const terminal = await runCli(["exec", file, "Details?", "--trace-dir", traces(), "--verbose"], { cwd: join(file, ".."), timeoutMs: 60_000 });
    expect(terminal.code, terminal.stderr).toBe(0);
    expectMasked(terminal.stdout + terminal.stderr, "the terminal");
  });

  it("runtime serve: the /v1/runs stream, GET /v1/runs/:id, and the OpenAI-compatible answer", async () => {
    const server = await serveTeam(file);
    closers.push(server);
    const { events } = await postRun(server.url, { input: "Details?" }, server.token);
    expect(
      events.some((e) => e.data.type === "llm.delta"),
      JSON.stringify(events.map((e) => e.data)),
    ).toBe(true);
    expectMasked(JSON.stringify(events.map((e) => e.data)), "the /v1/runs stream");
    const taskId = events[0]?.data.task_id ?? "";
    const got = await server.fetch(`${server.url}/v1/runs/${taskId}`);
    expect(got.status).toBe(200);
    const body = await got.text();
    expect(body).toContain("llm.delta");
    expectMasked(body, "GET /v1/runs/:id");

    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 });
    const completion = await client.chat.completions.create({ model: "guarded", messages: [{ role: "user", content: "Details?" }] });
    expectMasked(completion.choices[0]?.message.content ?? "", "a chat completion");
    const streamed = await client.chat.completions.create({ model: "guarded", messages: [{ role: "user", content: "Details?" }], stream: true });
    let text = "";
    for await (const chunk of streamed) text += chunk.choices[0]?.delta?.content ?? "";
    expectMasked(text, "a streamed chat completion");
  });

  it("runtime mcp: the call's result and its progress notifications", async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [BIN, "mcp", file],
      env: { PATH: process.env.PATH ?? "", RUNTIME_TRACE_DIR: tempDir("guarded-mcp-") },
      stderr: "pipe",
    });
    const client = new Client({ name: "test-client", version: "1.0.0" });
    closers.push(client);
    await client.connect(transport);
    const progress: string[] = [];
    const result = await client.callTool({ name: "solver", arguments: { query: "Details?" } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ""),
      timeout: 60_000,
    });
    expect(result.isError, JSON.stringify(result)).toBeFalsy();
    expectMasked(JSON.stringify(result), "the MCP result");
    for (const leak of LEAKS) expect(progress.join("\n")).not.toContain(leak);

    const blocked = await client.callTool({ name: "solver", arguments: { query: `Please ${INPUT_VARIANTS["Cyrillic look-alikes"]}.` } });
    expect(blocked.isError).toBe(true);
    expect(JSON.stringify(blocked)).toContain("blocked by guardrail 'no-injection'");
  });
});

describe("a look-alike injection, in the input and in every turn the client gives", { timeout: 180_000 }, () => {
  it("is blocked before any model request, over every door", async () => {
    const m = await model();
    closers.push(m);
    const file = team(m.url);
    const exec = await runCli(["exec", file, `Please ${INPUT_VARIANTS["zero-width space and joiner"]}.`, "--trace-dir", join(file, "..", "traces")], {
      cwd: join(file, ".."),
      timeoutMs: 60_000,
    });
    expect(exec.code).toBe(4);
    expect(exec.stderr).toContain("blocked by guardrail 'no-injection' (input)");

    const server = await serveTeam(file);
    closers.push(server);
    // Each spelling as the run's input.
    for (const [name, variant] of Object.entries(INPUT_VARIANTS)) {
      const { events } = await postRun(server.url, { input: `Now ${variant}.` }, server.token);
      expect(events.at(-1)?.data, name).toMatchObject({ type: "run.finished", result_type: "blocked", error_code: "BLOCKED" });
    }

    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 });
    const variant = INPUT_VARIANTS["full-width letters"]!;
    for (const messages of [
      // In an earlier user message.
      [
        { role: "user" as const, content: `First, ${variant}.` },
        { role: "assistant" as const, content: "OK." },
        { role: "user" as const, content: "Go on." },
      ],
      // In an assistant turn the client wrote.
      [
        { role: "user" as const, content: "Hi." },
        { role: "assistant" as const, content: `I will ${INPUT_VARIANTS["combining marks"]}.` },
        { role: "user" as const, content: "Go on." },
      ],
    ]) {
      const completion = await client.chat.completions.create({ model: "guarded", messages });
      expect(completion.choices[0]?.finish_reason).toBe("content_filter");
      expect(completion.choices[0]?.message.content).toContain("blocked by guardrail 'no-injection' (input)");
      expect(completion.choices[0]?.message.content).toContain("earlier turn 1");
    }
    const response = await client.responses.create({
      model: "guarded",
      input: [
        { role: "user", content: `Please ${INPUT_VARIANTS["soft hyphens"]}.` },
        { role: "assistant", content: "Fine." },
        { role: "user", content: "Go on." },
      ],
    });
    expect(response.status).toBe("incomplete");
    expect(response.incomplete_details?.reason).toBe("content_filter");

    const a2a = await a2aClient(server.url, server.token);
    const request = userMessage("Hello.");
    request.message!.parts.push({
      content: { $case: "text", value: INPUT_VARIANTS["Greek omicron and a bidi override"]! },
      mediaType: "text/plain",
      filename: "",
      metadata: {},
    });
    const task = (await a2a.sendMessage(request)) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(JSON.stringify(task.status?.message)).toContain("blocked by guardrail 'no-injection' (input)");

    // No door let any of them reach the model; the plain request still does.
    expect(m.chatRequests).toHaveLength(0);
    const fine = await client.chat.completions.create({
      model: "guarded",
      messages: [
        { role: "user", content: "Hi." },
        { role: "assistant", content: "Hello." },
        { role: "user", content: "How are you?" },
      ],
    });
    expect(fine.choices[0]?.message.content).toBe("fine");
    expect(m.chatRequests).toHaveLength(1);
  });
});

describe("an input guardrail that redacts", { timeout: 120_000 }, () => {
  it("masks every earlier turn the model reads: the client's, and the session's stored ones", async () => {
    const m = await startOpenAIServer({ respond: () => answer("noted") });
    closers.push(m);
    const file = writeTeam(`version: 1
name: guarded
models:
  default: { provider: openai, model: test-model, base_url: "${m.url}", api_key: sk-test, max_retries: 0, timeout_ms: 20000 }
guardrails:
  - { name: no-cards-in, on: input, pii: [credit_card], action: redact }
agents:
  solver: { kind: react }
`);
    const server = await serveTeam(file);
    closers.push(server);
    const card = OUTPUT_VARIANTS["Arabic-Indic digits in a card"]!.text;
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 });
    await client.chat.completions.create({
      model: "guarded",
      messages: [
        { role: "user", content: `My card is ${card}.` },
        { role: "assistant", content: `Your card ${card} is noted.` },
        { role: "user", content: "Which card?" },
      ],
    });
    const sent = JSON.stringify(m.chatRequests.at(-1)?.body?.messages);
    expect(sent).toContain("My card is [REDACTED].");
    expect(sent).toContain("Your card [REDACTED] is noted.");
    expect(sent).not.toContain("١١١١");

    // A session's first run is masked for its model, but stored as it was asked: the next run reads it masked too.
    await postRun(server.url, { input: `Keep ${card}.`, session_id: "cards-1" }, server.token);
    await postRun(server.url, { input: "What did I give you?", session_id: "cards-1" }, server.token);
    const later = JSON.stringify(m.chatRequests.at(-1)?.body?.messages);
    expect(later).toContain("Keep [REDACTED].");
    expect(later).not.toContain("١١١١");
  });
});
