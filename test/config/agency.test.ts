/**
 * The lint for excessive agency (docs/security.md#the-lint-for-excessive-agency):
 * `runtime validate` warns, at the line, about what gives an agent more power
 * than the file shows it guarding; `--strict` makes the warnings errors.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { writeTeam } from "../support/team.js";

const WRITTEN_KEY = "sk-live-written-in-the-file-0123456789";

/** A team that trips every rule once. */
const RISKY = `version: 1
name: risky
models:
  real:
    provider: openai
    model: gpt-4o-mini
    api_key: ${WRITTEN_KEY}
tools:
  fetch_page:
    description: Fetches a page.
    http: { url: "https://example.com/{{path}}" }
    parameters: { type: object, properties: { path: { type: string } }, required: [path] }
    effect: read
  deploy:
    description: Deploys the site.
    command: [./deploy.sh]
    parameters: { type: object, properties: {} }
agents:
  web:
    kind: react
    description: Reads pages and deploys.
    tools: [fetch_page, deploy, calculator]
`;

/** The same team, guarded: approval on the write tool, a budget, the key from the environment, a timeout. */
const GUARDED = `version: 1
name: guarded
budget: { max_cost_usd: 1, max_model_calls: 50 }
models:
  real:
    provider: openai
    model: gpt-4o-mini
    api_key: \${OPENAI_API_KEY:-unset}
tools:
  fetch_page:
    description: Fetches a page.
    http: { url: "https://example.com/{{path}}" }
    parameters: { type: object, properties: { path: { type: string } }, required: [path] }
    effect: read
  deploy:
    description: Deploys the site.
    command: [./deploy.sh]
    parameters: { type: object, properties: {} }
    timeout_ms: 120000
agents:
  web:
    kind: react
    description: Reads pages and deploys.
    tools: [fetch_page, deploy, calculator]
    approval: { deploy: required }
`;

describe("runtime validate: the lint for excessive agency", () => {
  it("warns at each line, says what to add, never prints the key, and exits 0; --strict exits 2", async () => {
    const file = writeTeam(RISKY, { "deploy.sh": "#!/bin/sh\n" });
    const result = await runCli(["validate", file]);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${file}: ok\n`);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(4);
    expect(result.stderr).not.toContain(WRITTEN_KEY);
    const at = (needle: string) => lines.find((l) => l.includes(needle)) ?? "";
    expect(at("reads content from outside")).toMatch(
      new RegExp(
        `^${file}:22:\\d+ /agents/web/tools warning: agent web reads content from outside the team \\(fetch_page\\) and may call deploy, .*Add approval: \\{deploy: required\\}`,
      ),
    );
    expect(at("sets no budget")).toMatch(
      new RegExp(`^${file}:4:3 /models/real warning: the team calls real models \\(real\\) and sets no budget.*Add budget:`),
    );
    expect(at("written in the file")).toMatch(
      new RegExp(`^${file}:7:\\d+ /models/real/api_key warning: api_key is written in the file.*with \\$\\{OPENAI_API_KEY\\} in place of the value`),
    );
    expect(at("default timeout_ms")).toMatch(new RegExp(`^${file}:14:3 /tools/deploy warning: command tool deploy runs on the default timeout_ms \\(30000\\)`));

    const strict = await runCli(["validate", "--strict", file]);
    expect(strict.code).toBe(2);
    expect(strict.stdout).toBe("");
    expect(strict.stderr).toContain("4 warning(s), which --strict makes errors");
  });

  it("is silent on the guarded team and on every example team, even with --strict", async () => {
    const file = writeTeam(GUARDED, { "deploy.sh": "#!/bin/sh\n" });
    const examples = ["circle-react", "circle-plan", "mcp-files", "plan-solver", "research-flow", "safety-sop", "unit-convert"].map((name) =>
      join("teams", `${name}.yaml`),
    );
    const result = await runCli(["validate", "--strict", file, ...examples]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
  });
  it("warns where a sandbox's writable covers the team folder or a module the team loads, and not for a folder of its own", async () => {
    const file = writeTeam(
      `version: 1
name: writable
models:
  offline: { provider: scripted, script: ./script.yaml }
tools:
  lookup: { module: ./code/lookup.mjs, effect: read }
  build:
    description: Builds.
    command: [./build.sh]
    parameters: { type: object, properties: {} }
    timeout_ms: 60000
    effect: read
    sandbox: { writable: [., ./out] }
  fs:
    mcp:
      command: [node, ./fs.mjs]
      sandbox: { writable: [./code] }
    effect: read
agents:
  solver:
    kind: react
    tools: [lookup, build, fs]
    guardrails:
      - on: output
        command: [./check.sh]
        sandbox: { writable: [./out, ./checks] }
      - on: output
        module: ./checks/judge.mjs
`,
      { "build.sh": "#!/bin/sh\n", "check.sh": "#!/bin/sh\n", "fs.mjs": "", "script.yaml": "version: 1\nreplies: [{ content: done }]\n" },
    );
    const dir = join(file, "..");
    for (const folder of ["code", "out", "checks"]) mkdirSync(join(dir, folder));
    writeFileSync(
      join(dir, "code", "lookup.mjs"),
      "export const description = 'x';\nexport const parameters = { type: 'object' };\nexport const effect = 'read';\nexport function execute() { return 1; }\n",
    );
    writeFileSync(join(dir, "checks", "judge.mjs"), "export default () => ({ pass: true });\n");
    const result = await runCli(["validate", file]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${file}:13:27 /tools/build/sandbox/writable/0 warning: writable \\. covers the team folder, which the team loads: a sandboxed program could rewrite it`,
        ),
      ),
      expect.stringMatching(
        new RegExp(`^${file}:17:29 /tools/fs/mcp/sandbox/writable/0 warning: writable \\./code covers the module of tool lookup, which the team loads`),
      ),
      expect.stringMatching(
        new RegExp(
          `^${file}:26:38 /agents/solver/guardrails/0/sandbox/writable/1 warning: writable \\./checks covers the module of guardrail .*Give the program a folder of its own`,
        ),
      ),
    ]);
    expect(result.stderr).not.toContain("writable/1 warning: writable ./out");
  });
});
