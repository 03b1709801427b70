import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadTeam, loadTeamFromString } from "../../src/config/load.js";
import { ConfigError } from "../../src/errors.js";
import { tempDir, writeTeam } from "../support/team.js";
import { BAD_CASES, BASE } from "../support/bad-team-files.js";

async function problems(text: string, file: string, env: Record<string, string> = {}): Promise<string[]> {
  try {
    await loadTeamFromString(text, file, { env });
  } catch (err) {
    if (err instanceof ConfigError) return err.problems.map((p) => `${p.line}:${p.col} ${p.path || "/"} ${p.message}`);
    throw err;
  }
  return [];
}

describe("loadTeam resolves a team completely", () => {
  it("fills every default and makes paths absolute", async () => {
    const dir = tempDir("runtime-config-load-");
    writeFileSync(join(dir, "solver.hbs"), "You solve. {{current_state}}");
    writeFileSync(join(dir, "script.yaml"), "version: 1\nreplies: []\n");
    const file = writeTeam(
      `version: 1
name: full
models:
  default:
    provider: openai
    model: gpt-4o-mini
    base_url: \${RUNTIME_TEST_BASE:-http://127.0.0.1:9/v1}
  offline: { provider: scripted, script: ./script.yaml }
tools:
  lookup:
    command: [./lookup.sh, --json]
  calc: { builtin: calculator }
agents:
  flow:
    kind: plan_and_solve_flow
    planner: planner
    executor: solver
  planner: { kind: react, model: offline, prompt: "Plan. {{current_state}}" }
  solver:
    kind: plan_and_solve
    system_prompt: ./solver.hbs
    tools: [lookup, calc, planner, write_todos]
  pipeline: { kind: plan_solver, planner: planner, solver: solver }
`,
      {},
      dir,
    );
    writeFileSync(join(dir, "lookup.sh"), "#!/bin/sh\n");
    const team = await loadTeam(file, { env: {} });

    expect(team.file).toBe(resolve(file));
    expect(team.dir).toBe(dir);
    expect(team.entry).toBe("flow");
    expect(team.description).toBe("");
    expect(team.workflows).toEqual({});
    expect(team.models.default).toEqual({
      name: "default",
      provider: "openai",
      model: "gpt-4o-mini",
      api: "chat_completions",
      base_url: "http://127.0.0.1:9/v1",
      timeout_ms: 60000,
      max_retries: 2,
      stream: true,
      idle_timeout_ms: 30000,
      max_retry_wait_ms: 30000,
      headers: {},
      extra_body: {},
      fallback: [],
      attachments: [],
      structured_output: false,
      cache: false,
      compact_at: 0.8,
    });
    expect(team.models.offline).toEqual({ name: "offline", provider: "scripted", model: "scripted", script: join(dir, "script.yaml"), stream: false });
    expect(team.tools.lookup).toEqual({
      name: "lookup",
      type: "command",
      command: [join(dir, "lookup.sh"), "--json"],
      cwd: dir,
      env: {},
      description: "",
      parameters: { type: "object", properties: {} },
      timeout_ms: 30000,
      max_output_bytes: 65536,
      effect: "write",
    });
    expect(team.tools.calc).toMatchObject({ type: "builtin", builtin: "calculator", timeout_ms: 30000 });
    expect(team.agents.flow).toEqual({
      name: "flow",
      kind: "plan_and_solve_flow",
      description: "",
      model: "default",
      max_iteration: 30,
      tools: [],
      approval: [],
      planner: "planner",
      executor: "solver",
      enable_replanner: false,
      max_replan_rounds: 30,
      replanner: "planner",
    });
    expect(team.agents.solver).toEqual({
      name: "solver",
      kind: "plan_and_solve",
      description: "",
      model: "default",
      max_iteration: 30,
      tools: ["lookup", "calc", "planner", "write_todos"],
      approval: [],
      system_prompt_file: join(dir, "solver.hbs"),
      prompt: "You solve. {{current_state}}",
      todo_complete_after: 3,
      todo_block_after: 2,
      plan: "required",
      verify: "checks",
      verifier: "default",
      max_verify_rounds: 1,
    });
    expect(team.agents.planner).toMatchObject({ model: "offline", prompt: "Plan. {{current_state}}" });
    expect(team.agents.pipeline).toMatchObject({ kind: "plan_solver", concurrency: 4 });
  });

  it("resolves http and mcp tools with their defaults", async () => {
    const dir = tempDir("runtime-config-tools-");
    writeFileSync(join(dir, "script.yaml"), "version: 1\nreplies: []\n");
    writeFileSync(join(dir, "server.mjs"), "");
    const text = `${BASE}tools:
  fetch:
    http: { url: "https://example.com/x", headers: { Authorization: "Bearer \${TOKEN:-none}" } }
  remote:
    mcp: { command: [./server.mjs, --stdio], env: { NOTES_TOKEN: "\${NOTES_TOKEN:-t0ken-value}" } }
    timeout_ms: 1000
  hosted:
    mcp: { url: "https://mcp.example.com/mcp", tools: [search] }
`;
    const team = await loadTeamFromString(text, join(dir, "team.yaml"), { env: {} });
    expect(team.tools.fetch).toEqual({
      name: "fetch",
      type: "http",
      url: "https://example.com/x",
      method: "POST",
      headers: { Authorization: "Bearer none" },
      allow_private: false,
      description: "",
      parameters: { type: "object", properties: {} },
      timeout_ms: 30000,
      max_output_bytes: 65536,
      effect: "write",
    });
    expect(team.tools.remote).toEqual({
      name: "remote",
      type: "mcp",
      server: { transport: "stdio", command: [join(dir, "server.mjs"), "--stdio"], cwd: dir, env: { NOTES_TOKEN: "t0ken-value" } },
      connect_timeout_ms: 30000,
      description: "",
      timeout_ms: 1000,
      max_output_bytes: 65536,
      effect: "write",
    });
    expect(team.tools.hosted).toEqual({
      name: "hosted",
      type: "mcp",
      server: { transport: "http", url: "https://mcp.example.com/mcp", headers: {} },
      tools: ["search"],
      connect_timeout_ms: 30000,
      description: "",
      timeout_ms: 30000,
      max_output_bytes: 65536,
      effect: "write",
    });
  });

  it("takes ${VAR} from the environment and uses the only model when none is named default", async () => {
    const dir = tempDir("runtime-config-env-");
    writeFileSync(join(dir, "script.yaml"), "version: 1\nreplies: []\n");
    const text = `version: 1
name: \${TEAM_NAME}
models:
  offline:
    provider: scripted
    script: ./\${SCRIPT:-script.yaml}
    model: $\${literal}
agents:
  solver: { kind: react }
`;
    const team = await loadTeamFromString(text, join(dir, "team.yaml"), { env: { TEAM_NAME: "from-env" } });
    expect(team.name).toBe("from-env");
    expect(team.models.offline).toMatchObject({ script: join(dir, "script.yaml"), model: "${literal}" });
    expect(team.agents.solver?.model).toBe("offline");
    expect(team.entry).toBe("solver");
  });

  it("an unset ${VAR} in a model no agent uses is not an error", async () => {
    const dir = tempDir("runtime-config-unused-");
    writeFileSync(join(dir, "script.yaml"), "version: 1\nreplies: []\n");
    const text = `version: 1
name: t
models:
  cloud: { provider: openai, model: gpt-4o-mini, api_key: "\${RUNTIME_TEST_UNSET_KEY}" }
  offline: { provider: scripted, script: ./script.yaml }
agents:
  solver: { kind: react, model: offline }
`;
    await expect(loadTeamFromString(text, join(dir, "team.yaml"), { env: {} })).resolves.toMatchObject({ name: "t" });
    const used = text.replace("model: offline", "model: cloud");
    expect(await problems(used, join(dir, "team.yaml"))).toEqual([
      "4:59 /models/cloud/api_key environment variable RUNTIME_TEST_UNSET_KEY is not set (write ${RUNTIME_TEST_UNSET_KEY:-default} to give a fallback)",
    ]);
  });

  it("reports every problem at once, in source order", async () => {
    const text = `${BASE}    max_iterations: 5\n    model: ofline\n  other:\n    kind: reac\n`;
    const found = await problems(text, "/nowhere/team.yaml");
    expect(found).toEqual([
      "4:42 /models/offline/script script file not found: /nowhere/script.yaml",
      "9:5 /agents/solver/max_iterations unknown key 'max_iterations' (did you mean 'max_iteration'?)",
      "10:12 /agents/solver/model unknown model 'ofline' (did you mean 'offline'?); declared models: offline",
      "12:11 /agents/other/kind expected one of 'react', 'plan_and_solve', 'plan_and_solve_flow', 'plan_solver' or 'sop', got 'reac' (did you mean 'react'?)",
    ]);
  });

  it("more than one model and none named default: the agent must name one", async () => {
    const dir = tempDir("runtime-config-models-");
    writeFileSync(join(dir, "s.yaml"), "version: 1\nreplies: []\n");
    const text = `version: 1
name: t
models:
  a: { provider: scripted, script: ./s.yaml }
  b: { provider: scripted, script: ./s.yaml }
agents:
  solver:
    kind: react
`;
    expect(await problems(text, join(dir, "team.yaml"))).toEqual([
      "7:3 /agents/solver no 'model' given and no model is named 'default': set 'model' to one of 'a' or 'b'",
    ]);
  });

  it("the example teams load", async () => {
    for (const name of readdirSync("teams").filter((f) => f.endsWith(".yaml") && !f.endsWith(".test.yaml"))) {
      const team = await loadTeam(join("teams", name));
      expect(team.agents[team.entry]).toBeDefined();
    }
  });
});

describe("hostile input", () => {
  const hostile = [
    "alias-bomb",
    "ten-megabytes",
    "proto-key",
    "constructor-key",
    "deep-flow-nesting",
    "deep-block-nesting",
    "binary-garbage",
    "duplicate-yaml-key",
  ];

  it.each(hostile)("%s is refused fast and pollutes no prototype", async (name) => {
    const c = BAD_CASES.find((b) => b.name === name)!;
    const text = typeof c.text === "string" ? c.text : new TextDecoder().decode(c.text);
    const before = Object.getOwnPropertyNames(Object.prototype).sort();
    const started = performance.now();
    const found = await problems(text, "/nowhere/team.yaml");
    const ms = performance.now() - started;
    expect(found.length).toBeGreaterThan(0);
    // Refused, not expanded: an alias bomb or a deep nesting followed through would take minutes or run out of memory.
    expect(ms).toBeLessThan(10_000);
    expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(before);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("thousands of mistakes: the first 100 are reported with a count of the rest, quickly", async () => {
    const text = `${BASE}${Array.from({ length: 5000 }, (_, i) => `  a${i}: { kind: react, tools: [tool${i}] }`).join("\n")}\n`;
    const started = performance.now();
    const found = await problems(text, "/nowhere/team.yaml");
    const ms = performance.now() - started;
    expect(found).toHaveLength(101);
    expect(found[0]).toBe("4:42 /models/offline/script script file not found: /nowhere/script.yaml");
    expect(found[1]).toMatch(/^9:30 \/agents\/a0\/tools\/0 unknown tool 'tool0'/);
    expect(found[100]).toMatch(/^\d+:\d+ \/ \d+ more problems not shown$/);
    // A bound that only catches a blow-up (every mistake formatted, or a quadratic search for suggestions).
    expect(ms).toBeLessThan(10_000);
  });

  it("a 10 MB file on disk is refused before it is read", async () => {
    const dir = tempDir("runtime-config-big-");
    const file = join(dir, "big.yaml");
    writeFileSync(file, Buffer.alloc(10 * 1024 * 1024, "#"));
    await expect(loadTeam(file)).rejects.toThrow(`${file}:1:1 / file is 10.0 MB: a team file may be at most 1 MB`);
  });

  it("the validated value never carries __proto__ even through aliases and flow maps", async () => {
    const text = `${BASE}x: &x { "__proto__": { polluted: 1 } }\ny: *x\n`;
    const found = await problems(text, "/nowhere/team.yaml");
    expect(found.filter((p) => p.includes("'__proto__' is not allowed"))).toHaveLength(2);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe("BAD_CASES fixtures", () => {
  it("are all different files", () => {
    const texts = BAD_CASES.map((c) => (typeof c.text === "string" ? c.text : c.text.toString("hex")));
    expect(new Set(texts).size).toBe(texts.length);
    expect(readFileSync(new URL("../support/bad-team-files.ts", import.meta.url), "utf8")).toContain(
      "one bad team file per kind of mistake".replace("one", "One"),
    );
  });
});
