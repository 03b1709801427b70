/**
 * Cached and reasoning tokens, where servers report them, over real HTTP with
 * the `openai` client: read from the reply (streamed or not), summed into
 * run.finished, and priced at the model's cached-input rate for budgets.
 */
import { afterAll, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { formatUsage } from "../../src/events/format.js";
import { usageOf } from "../../src/models/dialect.js";
import { startOpenAIServer, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

const REPLIES: Reply[] = [
  {
    content: reactReply("CALL_TOOL", {}, "", "I compute."),
    tool_calls: [{ id: "c1", name: "calculator", arguments: { expression: "6*7" } }],
    usage: { prompt_tokens: 1000, cached_tokens: 800, completion_tokens: 100, reasoning_tokens: 60 },
  },
  { content: reactReply("ANSWER", { answer: "42" }), usage: { prompt_tokens: 1200, cached_tokens: 1000, completion_tokens: 50, reasoning_tokens: 20 } },
];

async function run(stream: boolean, price: string) {
  const server = await startOpenAIServer({ replies: REPLIES });
  servers.push(server);
  const file = writeTeam(
    `version: 1
name: cached
budget: { max_cost_usd: 1 }
models:
  default: { provider: openai, model: gpt-4.1, base_url: "${server.url}", api_key: sk-usage-0123456789, max_retries: 0, stream: ${stream}, price: ${price} }
agents:
  solver: { kind: react, tools: [calculator] }
`,
    {},
    tempDir("usage-"),
  );
  const events: RunEvent[] = [];
  const result = await runTeam(await loadTeam(file), { input: "What is 6 times 7?", traceDir: tempDir("usage-trace-"), sinks: [(e) => events.push(e)] }).result;
  return { result, events };
}

describe("cached and reasoning tokens", () => {
  it.each([false, true])("are read from each reply (stream: %s), summed into run.finished and priced at the cached rate", async (stream) => {
    const { result, events } = await run(stream, "{ input_per_mtok: 1, cached_input_per_mtok: 0.1, output_per_mtok: 10 }");
    expect(result.answer).toBe("42");
    const usages = events.flatMap((e) => (e.type === "llm.response" ? [e.usage] : []));
    expect(usages).toEqual([
      { prompt_tokens: 1000, completion_tokens: 100, total_tokens: 1100, cached_tokens: 800, reasoning_tokens: 60 },
      { prompt_tokens: 1200, completion_tokens: 50, total_tokens: 1250, cached_tokens: 1000, reasoning_tokens: 20 },
    ]);
    const finished = events.find((e) => e.type === "run.finished");
    if (finished?.type !== "run.finished") throw new Error("no run.finished");
    // The hit rate, 1800 of 2200 prompt tokens read from the cache, is carried by a sum of usages.
    expect(finished.usage).toEqual({
      prompt_tokens: 2200,
      completion_tokens: 150,
      total_tokens: 2350,
      cached_tokens: 1800,
      reasoning_tokens: 80,
      cache_hit_rate: 0.818,
    });
    // (200 × $1 + 800 × $0.1 + 100 × $10 + 200 × $1 + 1000 × $0.1 + 50 × $10) per Mtok = $0.00208
    expect(finished.budget?.max_cost_usd).toEqual({ limit: 1, spent: 0.0021 });
  });

  it("cost the input rate when the price gives no cached rate", async () => {
    const { events } = await run(false, "{ input_per_mtok: 1, output_per_mtok: 10 }");
    const finished = events.find((e) => e.type === "run.finished");
    // (2200 × $1 + 150 × $10) per Mtok
    expect(finished?.type === "run.finished" && finished.budget?.max_cost_usd).toEqual({ limit: 1, spent: 0.0037 });
  });

  it("are read under each server's names, absent when not reported or 0, and shown in the summary", () => {
    const chat = { prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 2 } };
    expect(usageOf(chat)).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cached_tokens: 4, reasoning_tokens: 2 });
    // DeepSeek
    expect(usageOf({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, prompt_cache_hit_tokens: 6 })).toMatchObject({ cached_tokens: 6 });
    // The Responses API
    const responses = {
      input_tokens: 10,
      output_tokens: 5,
      total_tokens: 15,
      input_tokens_details: { cached_tokens: 3 },
      output_tokens_details: { reasoning_tokens: 1 },
    };
    expect(usageOf(responses)).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, cached_tokens: 3, reasoning_tokens: 1 });
    expect(usageOf({ prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } })).toEqual({
      prompt_tokens: 10,
      completion_tokens: 5,
      total_tokens: 15,
    });
    expect(formatUsage(usageOf(chat))).toBe("15 tokens (prompt 10 of which 4 cached, completion 5 of which 2 reasoning)");
  });
});
