/**
 * Judged cases (docs/testing.md#judged-cases) through `runtime test`: the
 * judge (the project's OpenAI-compatible test server) is asked under
 * --record and its verdict stored beside the test file; offline, with the
 * judge's server gone, the stored verdict decides; a changed answer refuses it.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir } from "../support/team.js";

// Spawns the built CLI: run `npm run build` first (npm test does).
const closers: OpenAIServer[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

function files(judgeUrl: string, answer: string): { dir: string; test: string } {
  const dir = tempDir("judged-");
  writeFileSync(
    join(dir, "team.yaml"),
    `version: 1
name: judged
models:
  offline: { provider: scripted, script: ./none.yaml }
  judge: { provider: openai, model: judge-model, base_url: "${judgeUrl}", api_key: sk-judge, max_retries: 0, timeout_ms: 10000 }
agents:
  solver: { kind: react, model: offline, tools: [calculator] }
`,
  );
  writeFileSync(join(dir, "none.yaml"), "version: 1\nreplies: []\n");
  const test = join(dir, "solver.test.yaml");
  writeFileSync(
    test,
    `version: 1
team: ./team.yaml
cases:
  - name: explains the area
    input: What is the area of a circle of radius 5 m?
    replies:
      - agent: solver
        content: '${reactReply("CALL_TOOL", {})}'
        tool_calls: [{ id: a, name: calculator, arguments: { expression: "round(pi * 5^2, 2)" } }]
      - agent: solver
        content: '${reactReply("ANSWER", { answer })}'
    expect:
      judge: { rubric: "Gives the area with its unit and says it comes from pi r squared.", model: judge, trajectory: true }
`,
  );
  return { dir, test };
}

const verdict = (pass: boolean, reason: string) => ({ content: JSON.stringify({ pass, reason }) });

describe("runtime test, judged cases", () => {
  it("--record asks the judge and stores its verdict; offline the verdict is reused with the judge unreachable; a changed answer refuses it", async () => {
    const judge = await startOpenAIServer({ respond: () => verdict(true, "area with unit, from pi r squared") });
    closers.push(judge);
    const { dir, test } = files(judge.url, "pi r² = {{result:a.result}} m²");
    const recorded = await runCli(["test", test, "--record"], { cwd: dir });
    expect(recorded.code, recorded.stdout + recorded.stderr).toBe(0);
    expect(judge.chatRequests).toHaveLength(1);
    // The judge saw the trajectory: the calculator call and its result, then the answer.
    const asked = JSON.stringify(judge.chatRequests[0]?.body?.messages);
    expect(asked).toContain("round(pi * 5^2, 2)");
    expect(asked).toContain("78.54");
    const stored = JSON.parse(readFileSync(join(dir, "solver.test.verdicts.json"), "utf8")) as { verdicts: Record<string, { pass: boolean }> };
    expect(stored.verdicts["explains the area"]).toMatchObject({ pass: true, model: "judge-model" });

    // Offline: the judge's server is gone; the stored verdict decides.
    await judge.close();
    closers.length = 0;
    const offline = await runCli(["test", test], { cwd: dir });
    expect(offline.code, offline.stdout).toBe(0);
    expect(offline.stdout).toContain("1 passed, 0 failed");

    // The answer changed: the verdict was for another one.
    writeFileSync(test, readFileSync(test, "utf8").replace("pi r² = ", "The area is "));
    const changed = await runCli(["test", test], { cwd: dir });
    expect(changed.code).toBe(1);
    expect(changed.stdout).toContain("the recorded verdict is for another answer; run runtime test --record");
  });

  it("a failing verdict fails the case with the judge's reason; a case never recorded says to record it", async () => {
    const judge = await startOpenAIServer({ respond: () => verdict(false, "the unit is missing") });
    closers.push(judge);
    const { dir, test } = files(judge.url, "{{result:a.result}}");
    const never = await runCli(["test", test], { cwd: dir });
    expect(never.code).toBe(1);
    expect(never.stdout).toContain("no recorded verdict for this rubric: run runtime test --record");
    expect(judge.chatRequests).toHaveLength(0);
    const recorded = await runCli(["test", test, "--record"], { cwd: dir });
    expect(recorded.code).toBe(1);
    expect(recorded.stdout).toContain("fails: the unit is missing");
    const offline = await runCli(["test", test], { cwd: dir });
    expect(offline.code).toBe(1);
    expect(offline.stdout).toContain("fails: the unit is missing");
  });
});

describe("runtime test --repeat and --models (live)", () => {
  function liveFiles(url: string, passRate?: number): { dir: string; test: string } {
    const dir = tempDir("repeat-");
    writeFileSync(
      join(dir, "team.yaml"),
      `version: 1
name: live
models:
  small: { provider: openai, model: small-model, base_url: "${url}", api_key: sk-a, max_retries: 0, timeout_ms: 10000, price: { input_per_mtok: 1, output_per_mtok: 2 } }
  large: { provider: openai, model: large-model, base_url: "${url}", api_key: sk-b, max_retries: 0, timeout_ms: 10000, price: { input_per_mtok: 10, output_per_mtok: 20 } }
agents:
  solver: { kind: react, model: small }
`,
    );
    writeFileSync(join(dir, "rec.yaml"), "version: 1\nreplies: []\n");
    const test = join(dir, "live.test.yaml");
    writeFileSync(
      test,
      `version: 1
team: ./team.yaml
cases:
  - name: says four
    input: What is 2 + 2?
    recording: ./rec.yaml${passRate !== undefined ? `\n    pass_rate: ${passRate}` : ""}
    expect:
      answer: { contains: "4" }
`,
    );
    return { dir, test };
  }

  it("--repeat runs each case N times live and holds it to its pass_rate", async () => {
    let n = 0;
    const server = await startOpenAIServer({
      respond: () => ({ content: reactReply("ANSWER", { answer: n++ % 3 === 1 ? "five" : "4" }), usage: { prompt_tokens: 100, completion_tokens: 10 } }),
    });
    closers.push(server);
    const strict = liveFiles(server.url);
    const all = await runCli(["test", strict.test, "--repeat", "3"], { cwd: strict.dir });
    expect(all.code).toBe(1);
    expect(all.stdout).toContain("✗ says four (2/3 passed");
    expect(all.stdout).toContain("pass_rate");
    expect(server.chatRequests).toHaveLength(3);
    const lenient = liveFiles(server.url, 0.6);
    const most = await runCli(["test", lenient.test, "--repeat", "3"], { cwd: lenient.dir });
    expect(most.code, most.stdout).toBe(0);
    expect(most.stdout).toContain("✓ says four (2/3 passed");
    expect((await runCli(["test", strict.test, "--repeat", "0"], { cwd: strict.dir })).code).toBe(2);
  });

  it("--models runs the suite on each model and prints a case × model table with passes, tokens, cost and time, also as JUnit", async () => {
    const server = await startOpenAIServer({
      respond: (body) => ({
        content: reactReply("ANSWER", { answer: body.model === "large-model" ? "4" : "five" }),
        usage: { prompt_tokens: 1000, completion_tokens: 100 },
      }),
    });
    closers.push(server);
    const { dir, test } = liveFiles(server.url);
    const junit = join(dir, "report.xml");
    const run = await runCli(["test", test, "--models", "small,large", "--junit", junit], { cwd: dir });
    expect(run.code).toBe(1);
    const table = run.stdout.slice(run.stdout.indexOf("case "));
    expect(table).toMatch(/says four\s+✗ 0\/1 · 1100 tok · \$0\.0012 · [\d.]+ s\s+✓ 1\/1 · 1100 tok · \$0\.0120 · [\d.]+ s/);
    const xml = readFileSync(junit, "utf8");
    expect(xml).toContain('name="says four [small]"');
    expect(xml).toContain('name="says four [large]"');
    expect(xml).toContain('<property name="cost_usd" value="0.012000"/>');
    const unknown = await runCli(["test", test, "--models", "small,huge"], { cwd: dir });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("--models: no model 'huge'");
  });
});
