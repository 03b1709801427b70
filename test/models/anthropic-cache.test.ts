/**
 * Prompt caching on `provider: anthropic` (docs/model-servers.md#prompt-caching):
 * a 10-step react run against the test server, whose prompt cache counts
 * reads and writes as Anthropic's does. With the cache on (the default) the
 * requests carry breakpoints on the tools, the system prompt and the
 * conversation's stable prefix, and `run.finished` counts cached and
 * cache-written tokens, priced apart; with `cache: false` there are none.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent, Usage } from "../../src/events/types.js";
import { costOf } from "../../src/events/usage.js";
import { type OpenAIServer, startOpenAIServer } from "../support/openai-server.js";
import { tempDir, writeTeam } from "../support/team.js";

const PRICE = { input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75 };
const STEPS = 10;

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Nine calculator calls, one a step, then the answer. */
function reply(_body: unknown, index: number) {
  if (index < STEPS - 1) {
    return {
      content: JSON.stringify({ observe: `step ${index + 1}`, thought: "add one more", action: { result: { action_type: "CALL_TOOL", output: {} } } }),
      tool_calls: [{ id: `call_${index + 1}`, name: "calculator", arguments: { expression: `${index} + 1` } }],
    };
  }
  return { content: JSON.stringify({ observe: "done", thought: "answer", action: { result: { action_type: "ANSWER", output: { answer: "nine" } } } }) };
}

async function tenSteps(cache: boolean | undefined): Promise<{ usage: Usage; requests: NonNullable<OpenAIServer["requests"][number]["body"]>[] }> {
  server = await startOpenAIServer({ respond: reply });
  const price = `{input_per_mtok: 3, output_per_mtok: 15, cached_input_per_mtok: 0.3, cache_write_per_mtok: 3.75}`;
  const file = writeTeam(`version: 1
name: cache-${cache}
models:
  claude: { provider: anthropic, model: claude-test, base_url: "${server.url.replace(/\/v1$/, "")}", api_key: sk-ant-test-0123456789, max_retries: 0, price: ${price}${cache === undefined ? "" : `, cache: ${cache}`} }
agents:
  solver: { kind: react, model: claude, max_iteration: 12, tools: [calculator, terminate] }
`);
  const events: RunEvent[] = [];
  const result = await runTeam(await loadTeam(file), {
    input: "Count to nine with the calculator.",
    traceDir: tempDir("cache-"),
    sinks: [(e) => events.push(e)],
  }).result;
  expect(result.error?.message).toBeUndefined();
  expect(result.answer).toBe("nine");
  const finished = events.at(-1);
  if (finished?.type !== "run.finished") throw new Error("no run.finished");
  expect(server.anthropicRequests).toHaveLength(STEPS);
  return { usage: finished.usage, requests: server.anthropicRequests.map((r) => r.body ?? {}) };
}

const breakpoints = (body: object) => JSON.stringify(body).split('"cache_control"').length - 1;

describe("prompt caching on provider: anthropic, a 10-step react run", () => {
  it("cache on: breakpoints on the tools and the system prompt's stable head; cached and written tokens in run.finished, priced apart", async () => {
    const { usage, requests } = await tenSteps(undefined);
    for (const [i, body] of requests.entries()) {
      const tools = body.tools as Array<{ cache_control?: unknown }>;
      expect(tools.at(-1)?.cache_control).toEqual({ type: "ephemeral" });
      expect(tools.slice(0, -1).every((t) => t.cache_control === undefined)).toBe(true);
      // The system prompt's head; from the second request on, its tail (react's current state, which changes every recursion) apart, uncached.
      const system = body["system"] as Array<{ cache_control?: unknown }>;
      expect(system[0]?.cache_control).toEqual({ type: "ephemeral" });
      expect(system.length).toBe(i === 0 ? 1 : 2);
      expect(system[1]?.cache_control).toBeUndefined();
      // Behind react's changing state the conversation is never cached: its breakpoint would only write.
      expect(JSON.stringify(body.messages)).not.toContain("cache_control");
      expect(breakpoints(body)).toBeLessThanOrEqual(4);
    }
    expect(usage.cached_tokens).toBeGreaterThan(0);
    expect(usage.cache_write_tokens).toBeGreaterThan(0);
    expect(usage.cache_hit_rate).toBe(Math.round(((usage.cached_tokens ?? 0) / usage.prompt_tokens) * 1000) / 1000);
    expect(usage.cache_hit_rate).toBeGreaterThan(0.3);
    const uncached = costOf({ ...usage, cached_tokens: 0, cache_write_tokens: 0 }, PRICE);
    expect(costOf(usage, PRICE)).toBeLessThan(uncached);
    const bytes = requests.reduce((n, b) => n + JSON.stringify(b).length, 0);
    console.log(
      `cache on: ${bytes} request bytes, usage ${JSON.stringify(usage)}, cost $${costOf(usage, PRICE).toFixed(6)} (uncached $${uncached.toFixed(6)})`,
    );
  });

  it("cache: false: no breakpoint in any request, no cached or written tokens", async () => {
    const { usage, requests } = await tenSteps(false);
    for (const body of requests) expect(breakpoints(body)).toBe(0);
    expect(usage.cached_tokens).toBeUndefined();
    expect(usage.cache_write_tokens).toBeUndefined();
    expect(usage.cache_hit_rate).toBeUndefined();
    const bytes = requests.reduce((n, b) => n + JSON.stringify(b).length, 0);
    console.log(`cache off: ${bytes} request bytes, usage ${JSON.stringify(usage)}, cost $${costOf(usage, PRICE).toFixed(6)}`);
  });
});
