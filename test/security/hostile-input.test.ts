/**
 * Hostile input gets a clear error naming the limit it hit, and loses
 * nothing (docs/design/engine.md#limits): deeply nested tool arguments, model
 * replies and tool results; team files nested too deep; prompt and script
 * files outside the team's folder or too large; secrets in validation
 * messages.
 */
import { mkdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { RunEvent } from "../../src/events/types.js";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer, type OpenAIServerOptions } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const DEEP = 100_000;
const deepJson = (n: number) => `${"[".repeat(n)}1${"]".repeat(n)}`;

/** Every event of a run in NDJSON, and its seqs without a gap. */
function parseNdjson(stdout: string): RunEvent[] {
  const events = stdout
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l) as RunEvent);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  return events;
}

async function teamWith(respond: NonNullable<OpenAIServerOptions["respond"]>, extra = "", tools = "[calculator]") {
  const server = await startOpenAIServer({ respond });
  servers.push(server);
  return writeTeam(`version: 1
name: hostile
models:
  default: { provider: openai, model: m, base_url: "${server.url}", api_key: sk-hostile-0123456789, max_retries: 0 }
${extra}agents:
  solver: { kind: react, max_iteration: 3, tools: ${tools} }
`);
}

describe("deep nesting", () => {
  it(`tool arguments ${DEEP} levels deep: a clear tool error, every event stored and streamed`, async () => {
    const team = await teamWith((body) =>
      (body.messages ?? []).some((m) => m.role === "assistant")
        ? { content: reactReply("ANSWER", { answer: "done" }) }
        : { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "deep", name: "calculator", arguments: `{"expression": ${deepJson(DEEP)}}` }] },
    );
    const traces = tempDir("deep-trace-");
    const run = await runCli(["exec", team, "go", "--events", "ndjson", "--trace-dir", traces]);
    expect(run.stderr).not.toMatch(/Maximum call stack/);
    expect(run.code).toBe(0);
    const events = parseNdjson(run.stdout);
    const finished = events.find((e) => e.type === "tool.finished");
    expect(finished).toMatchObject({ ok: false, error: expect.stringMatching(/nests deeper than 64 levels/) });
    const stored = await runCli(["trace", events[0]!.task_id, "--json", "--trace-dir", traces]);
    expect(stored.stdout.trim().split("\n")).toHaveLength(events.length);
  });

  it("a model reply nested too deep is sent back as INVALID, naming the limit", async () => {
    const team = await teamWith((body) =>
      (body.messages ?? []).some((m) => m.role === "assistant")
        ? { content: reactReply("ANSWER", { answer: "recovered" }) }
        : { content: `{"observe": "", "thought": "", "action": {"result": {"action_type": "ANSWER", "output": {"answer": ${deepJson(DEEP)}}}}}` },
    );
    const run = await runCli(["exec", team, "go", "--events", "ndjson", "--trace-dir", tempDir()]);
    expect(run.code).toBe(0);
    const events = parseNdjson(run.stdout);
    const refused = events.find((e) => e.type === "llm.response" && e.action_type === "INVALID");
    expect(refused?.type === "llm.response" && refused.error).toMatch(/nests deeper than 64 levels/);
    expect(events.at(-1)).toMatchObject({ type: "run.finished", answer: "recovered" });
  });

  it("a tool result nested too deep is a tool error, not a lost event", async () => {
    const dir = tempDir("deep-tool-");
    writeFileSync(join(dir, "deep.mjs"), `process.stdout.write(${JSON.stringify(deepJson(20_000))});\n`);
    const team = await teamWith(
      (body) =>
        (body.messages ?? []).some((m) => m.role === "assistant")
          ? { content: reactReply("ANSWER", { answer: "done" }) }
          : { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "t", name: "deep", arguments: {} }] },
      `tools:\n  deep: { command: [node, ${join(dir, "deep.mjs")}], max_output_bytes: 100000 }\n`,
      "[deep]",
    );
    const run = await runCli(["exec", team, "go", "--events", "ndjson", "--trace-dir", tempDir()]);
    expect(run.code).toBe(0);
    const events = parseNdjson(run.stdout);
    expect(events.find((e) => e.type === "tool.finished")).toMatchObject({ ok: false, error: expect.stringMatching(/nests deeper than 64 levels/) });
  });

  it("a team file nested too deep in block style is refused in one line", async () => {
    const file = writeTeam(`version: 1\nname: deep\nx:\n  ${"- ".repeat(50_000)}v\n`);
    const run = await runCli(["validate", file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/:4:1 \/ nesting deeper than 64 levels/);
    expect(run.stderr).not.toMatch(/call stack/);
  });
});

describe("files a team reads", () => {
  const scripted = "models:\n  m: { provider: scripted, script: ./s.yaml }\n";
  const files = { "s.yaml": "version: 1\nreplies: []\n" };

  it("refuses a prompt path outside the team's folder, at its line, unless the team opts out", async () => {
    const file = writeTeam(`version: 1\nname: p\n${scripted}agents:\n  a:\n    kind: react\n    system_prompt: ../../../../../../etc/passwd\n`, files);
    const run = await runCli(["validate", file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(
      /team\.yaml:8:20 \/agents\/a\/system_prompt prompt file \/etc\/passwd is outside the team file's folder .*set allow_outside_paths: true/,
    );
    const outside = join(tempDir("outside-"), "p.hbs");
    writeFileSync(outside, "You are {{agent_name}}.");
    const optedOut = writeTeam(
      `version: 1\nname: p\nallow_outside_paths: true\n${scripted}agents:\n  a:\n    kind: react\n    system_prompt: ${outside}\n`,
      files,
    );
    expect((await runCli(["validate", optedOut])).code).toBe(0);
  });

  it("follows symbolic links: a link inside the folder to a file outside is outside", async () => {
    const outside = join(tempDir("target-"), "secret.hbs");
    writeFileSync(outside, "You are {{agent_name}}.");
    const dir = tempDir("linked-");
    mkdirSync(join(dir, "prompts"));
    symlinkSync(outside, join(dir, "prompts", "p.hbs"));
    const file = writeTeam(`version: 1\nname: p\n${scripted}agents:\n  a:\n    kind: react\n    system_prompt: ./prompts/p.hbs\n`, files, dir);
    const run = await runCli(["validate", file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/is outside the team file's folder/);
    const allowed = writeTeam(
      `version: 1\nname: p\nallow_outside_paths: true\n${scripted}agents:\n  a:\n    kind: react\n    system_prompt: ./prompts/p.hbs\n`,
      files,
      dir,
    );
    expect((await runCli(["validate", allowed])).code).toBe(0);
  });

  it("refuses a prompt file over 1 MB, naming the limit", async () => {
    const dir = tempDir("big-");
    writeFileSync(join(dir, "big.hbs"), "x".repeat(1024 * 1024 + 1));
    const file = writeTeam(`version: 1\nname: p\n${scripted}agents:\n  a:\n    kind: react\n    system_prompt: ./big.hbs\n`, files, dir);
    const run = await runCli(["validate", file]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/prompt file .*big\.hbs is 1048577 bytes: at most 1048576 are read/);
  });
});

describe("secrets in validation messages", () => {
  it("masks the value of a secret-named variable interpolated into a field that fails validation", async () => {
    const secret = "opaque-9f8e7d6c5b4a-value";
    const file = writeTeam(
      `version: 1\nname: s\nmodels:\n  m: { provider: scripted, script: ./s.yaml }\nagents:\n  a:\n    kind: react\n    max_iteration: \${SERVICE_API_KEY}\n    description: \${SERVICE_API_KEY}-\${SERVICE_API_KEY}\n`,
      {
        "s.yaml": "version: 1\nreplies: []\n",
      },
    );
    const run = await runCli(["validate", file], { env: { SERVICE_API_KEY: secret } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/\/agents\/a\/max_iteration/);
    expect(run.stderr).not.toContain(secret);
  });
});
