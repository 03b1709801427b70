import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import type { RunEvent } from "../../src/events/types.js";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const modelBlock = (name: string, model: string, url: string, extra = "") => `  ${name}:
    provider: openai
    model: ${model}
    base_url: ${url}
    api_key: sk-fallback
    max_retries: 0
    timeout_ms: 3000
${extra}`;

describe("fallback models", () => {
  it("answers with the next model when one is unavailable, says so, and goes straight to it afterwards", async () => {
    const down = await startOpenAIServer({ respond: () => ({ status: 503, error: { message: "overloaded" } }) });
    const up = await startOpenAIServer({
      respond: (body) =>
        (body.messages ?? []).some((m) => m.role === "assistant")
          ? { content: reactReply("ANSWER", { answer: "42" }) }
          : { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "c1", name: "calculator", arguments: { expression: "6*7" } }] },
    });
    servers.push(down, up);
    const file = writeTeam(`version: 1
name: fallback
models:
${modelBlock("primary", "big-model", down.url, "    fallback: [backup]\n")}${modelBlock("backup", "small-model", up.url)}agents:
  solver:
    kind: react
    model: primary
    tools: [calculator]
`);
    const traceDir = tempDir("fallback-trace-");
    const events: RunEvent[] = [];
    const result = await runTeam(await loadTeam(file), { input: "6*7?", traceDir, sinks: [(e) => events.push(e)] }).result;
    expect(result.answer).toBe("42");
    const notices = events.filter((e) => e.type === "llm.notice");
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatchObject({ model: "big-model", notice: "fallback" });
    expect(notices[0]?.type === "llm.notice" && notices[0].message).toMatch(/503 overloaded.*trying fallback model 'backup'/);
    expect(events.filter((e) => e.type === "llm.response").map((e) => (e.type === "llm.response" ? e.model : ""))).toEqual(["small-model", "small-model"]);
    // The model found down is not asked again in the same run.
    expect(down.chatRequests).toHaveLength(1);
    const trace = await runCli(["trace", result.task_id, "--trace-dir", traceDir]);
    expect(trace.stdout).toMatch(/✗ llm big-model \(primary\) error: .*503/);
    expect(trace.stdout).toMatch(/! .*trying fallback model 'backup'/);
    expect(trace.stdout).toMatch(/llm small-model \(backup\)/);
    expect(events.filter((e) => e.type === "llm.response").every((e) => e.type === "llm.response" && e.model_name === "backup")).toBe(true);
  });

  it("refuses a fallback that names no model, or the model itself", async () => {
    const file = writeTeam(`version: 1
name: bad-fallback
models:
  a: { provider: openai, model: x, api_key: k, fallback: [a, nope] }
agents:
  solver: { kind: react, model: a }
`);
    const run = await runCli(["validate", file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/\/models\/a\/fallback\/0 model 'a' cannot be its own fallback/);
    expect(run.stderr).toMatch(/\/models\/a\/fallback\/1 unknown model 'nope'/);
  });
});
