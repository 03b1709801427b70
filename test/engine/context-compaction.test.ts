/**
 * Context that fits (docs/context.md): a react run on a model with
 * `context_window: 4000` whose tool results are bulky keeps every request
 * under the window (counted here with the same tokenizer, on what the
 * server received), compacts (`context.compacted`, one summary request)
 * and answers; killed with SIGKILL right after the summary came back, it
 * resumes reusing the journaled summary (no second summary request, the
 * same request bytes as the uninterrupted run) and replays identical.
 */
import { Tiktoken } from "js-tiktoken/lite";
import o200k from "js-tiktoken/ranks/o200k_base";
import { afterAll, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { type Arrival, execKilledAt, storedRun } from "../support/kill-resume.js";
import { type ChatBody, type OpenAIServer, type Reply, startOpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const PAGES = 8;
const encoder = new Tiktoken(o200k);
/** The tokens of a request as received: each message's content, tool calls and overhead, and the tools. */
function tokensOf(body: ChatBody | undefined): number {
  let n = body?.tools ? encoder.encode(JSON.stringify(body.tools)).length : 0;
  for (const m of body?.messages ?? []) {
    n += 4 + encoder.encode(typeof m.content === "string" ? m.content : "", [], []).length;
  }
  return n;
}

const isSummaryRequest = (body: ChatBody | undefined) => String(body?.messages?.[0]?.content ?? "").startsWith("Summarise the earlier part");

/** Read pages 1..PAGES, one per recursion, then answer with what page 3 said. */
function reply(body: ChatBody): Reply {
  if (isSummaryRequest(body)) return { content: "Pages read so far hold filler text; page 3's code is K-3." };
  const system = String(body.messages?.find((m) => m.role === "system")?.content ?? "");
  const recursion = Number(/Recursion (\d+) of at most/.exec(system)?.[1] ?? 0);
  if (recursion <= PAGES) {
    return {
      content: reactReply("CALL_TOOL", {}, "", `page ${recursion}`),
      tool_calls: [{ id: `c${recursion}`, name: "read_page", arguments: { n: recursion } }],
    };
  }
  return { content: reactReply("ANSWER", { answer: "page 3's code is K-3" }) };
}

async function team(options: { model?: string; agent?: string } = {}) {
  const arrival: Arrival = {};
  const server = await startOpenAIServer({ respond: (body, index) => (arrival.onArrival?.(index) === "drop" ? { drop: true } : reply(body)) });
  servers.push(server);
  const file = writeTeam(
    `version: 1
name: long-reader
models:
  default: { provider: openai, model: gpt-4o-mini, base_url: "${server.url}", api_key: sk-compact-0123456789, max_retries: 0, context_window: 4000${options.model ?? ""} }
  small: { provider: openai, model: small-model, base_url: "${server.url}", api_key: sk-compact-0123456789, max_retries: 0 }
  tiny: { provider: openai, model: tiny-model, base_url: "${server.url}", api_key: sk-compact-0123456789, max_retries: 0 }
tools:
  read_page:
    command: [node, ./page.mjs]
    effect: read
    description: Read one page of the report.
    parameters: { type: object, properties: { n: { type: integer } }, required: [n] }
agents:
  reader: { kind: react, tools: [read_page], max_iteration: 12${options.agent ?? ""} }
`,
    {
      // About 1,200 tokens a page: three pages pass the window's 80%.
      "page.mjs": `let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const { n } = JSON.parse(input);
  const words = Array.from({ length: 1100 }, (_, i) => "word" + ((i * 7 + n) % 97)).join(" ");
  process.stdout.write(JSON.stringify({ page: n, code: "K-" + n, text: words }));
});
`,
    },
  );
  return { server, file, arrival };
}

describe("a long react run on a model with context_window: 4000", () => {
  it("keeps every request under the window, compacts once per need, answers; killed past the summary, resumes and replays the same", async () => {
    const clean = await team();
    const traceClean = tempDir();
    const baseline = await runCli(["exec", clean.file, "What is page 3's code?", "--trace-dir", traceClean], { timeoutMs: 60_000 });
    expect(baseline.stderr).toBe("");
    expect(baseline.stdout).toBe("page 3's code is K-3\n");
    const bodies = clean.server.chatRequests.map((r) => r.body);
    const sizes = bodies.map(tokensOf);
    for (const size of sizes) expect(size).toBeLessThan(4000);
    const summaries = bodies.flatMap((b, i) => (isSummaryRequest(b) ? [i] : []));
    expect(summaries.length).toBeGreaterThan(0);
    const run = storedRun(traceClean);
    // Without compaction the last request would hold every page, twice the window.
    const pages = run.events.flatMap((e) => (e.type === "tool.finished" ? [encoder.encode(JSON.stringify(e.result)).length] : []));
    expect(pages).toHaveLength(PAGES);
    expect(pages.reduce((a, b) => a + b, 0)).toBeGreaterThan(2 * 4000);
    const compacted = run.events.filter((e) => e.type === "context.compacted");
    expect(compacted.length).toBeGreaterThanOrEqual(summaries.length);
    for (const e of compacted) expect(e.type === "context.compacted" && e.tokens_after < e.tokens_before).toBe(true);
    // The layout after a summary: the user's request, one system prompt, the summary, the recent recursions.
    const after = bodies[summaries[0]! + 1]?.messages ?? [];
    expect(after.map((m) => m.role).slice(0, 3)).toEqual(["user", "system", "assistant"]);
    expect(String(after[2]?.content)).toMatch(/^Summary of the earlier part of this work \(\d+ messages\):\nPages read so far/);
    const replayed = await runCli(["replay", run.task_id, "--trace-dir", traceClean]);
    expect(replayed.stdout).toMatch(/^identical: \d+ events, the same answer\n$/);

    // Killed as the request right after the first summary arrives: the summary is journaled, its request unanswered.
    const killAt = summaries[0]! + 1;
    const { server, file, arrival } = await team();
    const traceDir = tempDir();
    await execKilledAt([file, "What is page 3's code?", "--trace-dir", traceDir], arrival, killAt);
    const resumed = await runCli(["resume", storedRun(traceDir).task_id, "--trace-dir", traceDir], { timeoutMs: 60_000 });
    expect(resumed.stderr).toBe("");
    expect(resumed.stdout).toBe("page 3's code is K-3\n");
    // The resumed process asks from the unanswered request on, byte for byte as the uninterrupted run did: no second summary of the same part.
    const sent = server.chatRequests.map((r) => JSON.stringify(r.body));
    expect(sent.slice(killAt + 1)).toEqual(bodies.slice(killAt).map((b) => JSON.stringify(b)));
    const stored = storedRun(traceDir);
    expect(stored.events.filter((e) => e.type === "context.compacted")).toHaveLength(compacted.length);
    const replayResumed = await runCli(["replay", stored.task_id, "--trace-dir", traceDir]);
    expect(replayResumed.stdout).toMatch(/^identical: \d+ events, the same answer\n$/);
  }, 120_000);

  it("a request that cannot fit even compacted fails before it is sent, naming the window and the sizes", async () => {
    const { server, file } = await team();
    const question = Array.from({ length: 4000 }, (_, i) => `q${i}`).join(" ");
    const r = await runCli(["exec", file, question, "--trace-dir", tempDir()]);
    expect(r.code).toBe(1);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(
      /the request to model 'default' needs about \d+ tokens, more than its context_window of 4000 even compacted \(the request and system prompt alone: \d+\)/,
    );
    expect(server.chatRequests).toHaveLength(0);
  });

  it("compaction: {model} names the model that writes the summary, the agent's before the model's", async () => {
    for (const [options, expected] of [
      [{ model: ", compaction: { model: small }" }, "small-model"],
      [{ model: ", compaction: { model: small }", agent: ", compaction: { model: tiny }" }, "tiny-model"],
    ] as const) {
      const { server, file } = await team(options);
      const r = await runCli(["exec", file, "What is page 3's code?", "--trace-dir", tempDir()], { timeoutMs: 60_000 });
      expect(r.stdout).toBe("page 3's code is K-3\n");
      const models = server.chatRequests.map((q) => (isSummaryRequest(q.body) ? `summary:${q.body?.model}` : q.body?.model));
      expect(models.filter((m) => m?.startsWith("summary:")).length).toBeGreaterThan(0);
      expect(new Set(models)).toEqual(new Set(["gpt-4o-mini", `summary:${expected}`]));
    }
  }, 120_000);

  it("an unknown compaction model is a config error at its key", async () => {
    const { file } = await team({ agent: ", compaction: { model: nope }" });
    const r = await runCli(["validate", file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/\/agents\/reader\/compaction\/model unknown model 'nope'/);
  });
});
