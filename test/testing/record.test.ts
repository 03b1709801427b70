/**
 * `runtime test --record`: a case with a recording runs on the team's model
 * as configured (here the project's OpenAI-compatible test server, reached
 * through the real `openai` client, its address given by an environment
 * variable) and its recording is rewritten; offline runs then replay it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir } from "../support/team.js";

const KEY = "sk-record-test-SECRET-31415";
let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function folder(): string {
  const dir = tempDir();
  writeFileSync(
    join(dir, "team.yaml"),
    `version: 1
name: recorded
models:
  default:
    provider: openai
    model: test-model
    base_url: \${RECORD_BASE_URL:-http://127.0.0.1:9/v1}
    api_key: \${RECORD_API_KEY:-none}
    max_retries: 0
    timeout_ms: 5000
agents:
  solver:
    kind: react
    tools: [calculator]
`,
  );
  writeFileSync(
    join(dir, "team.test.yaml"),
    `version: 1
team: ./team.yaml
cases:
  - name: live case
    input: "Circle of radius 5: its area?"
    recording: ./recordings/area.yaml
    expect:
      tool_calls: [{ name: calculator, arguments: { expression: "round(pi * 5^2, 2)" } }]
      answer: { contains: "78.54 m² (from the server)" }
  - name: inline case
    input: anything
    replies: [{ agent: solver, content: plain answer }]
    expect: { answer: { equals: plain answer } }
`,
  );
  return dir;
}

describe("runtime test --record", () => {
  it("rewrites a recording from the live model; offline runs replay it", async () => {
    const dir = folder();
    const recording = join(dir, "recordings", "area.yaml");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(join(dir, "recordings"));
    writeFileSync(recording, `version: 1\nreplies:\n  - { agent: solver, content: stale answer }\n`);

    // Offline, the stale recording fails the case: the recording is what it runs on.
    const before = await runCli(["test", dir]);
    expect(before.code).toBe(1);
    expect(before.stdout).toContain('answer: expected to contain "78.54 m² (from the server)", got "stale answer"');

    server = await startOpenAIServer({
      apiKey: KEY,
      respond(_body, index) {
        if (index === 0) {
          return {
            content: reactReply("CALL_TOOL", {}, "first", "compute"),
            tool_calls: [{ id: "c_area", name: "calculator", arguments: { expression: "round(pi * 5^2, 2)" } }],
          };
        }
        return { content: reactReply("ANSWER", { answer: "The area is 78.54 m² (from the server)." }, "done", "answer") };
      },
    });
    const env = { RECORD_BASE_URL: server.url, RECORD_API_KEY: KEY };
    const recorded = await runCli(["test", dir, "--record"], { env });
    expect(recorded.stderr).toBe("");
    expect(recorded.code, recorded.stdout).toBe(0);
    expect(recorded.stdout).toContain(`recorded ${recording}`);
    // Only the case with a recording went to the server: two model calls.
    expect(server.chatRequests).toHaveLength(2);
    const text = readFileSync(recording, "utf8");
    expect(text).toContain("from the server");
    expect(text).toContain("round(pi * 5^2, 2)");
    expect(text).not.toContain(KEY);
    expect(text).not.toContain("stale answer");

    // Offline again (no address, no key): the new recording passes, the server is not asked.
    const after = await runCli(["test", dir]);
    expect(after.code, after.stdout).toBe(0);
    expect(after.stdout).toMatch(/\n2 passed, 0 failed \(\d+ ms\)\n$/);
    expect(server.chatRequests).toHaveLength(2);
  }, 60_000);

  it("a live model that fails leaves the recording as it was", async () => {
    const dir = folder();
    const recording = join(dir, "recordings", "area.yaml");
    const { mkdirSync } = await import("node:fs");
    mkdirSync(join(dir, "recordings"));
    const old = `version: 1\nreplies:\n  - { agent: solver, content: stale answer }\n`;
    writeFileSync(recording, old);
    server = await startOpenAIServer({ apiKey: KEY, replies: [{ status: 500, error: { message: "the server broke" } }] });
    const r = await runCli(["test", dir, "--record"], { env: { RECORD_BASE_URL: server.url, RECORD_API_KEY: KEY } });
    expect(r.code).toBe(1);
    expect(r.stdout).toContain(`recording: expected the live run to end with result answer, to record it, got error; ${recording} left as it was`);
    expect(readFileSync(recording, "utf8")).toBe(old);
  }, 60_000);
});
