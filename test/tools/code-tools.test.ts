/**
 * Tools written in code (docs/code-tools.md): `module:` tools of a team file,
 * run in-process through the ToolBox, and `runTeam(team, { tools })` with
 * `defineTool()`. Runs go over HTTP to the OpenAI-compatible test server.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam, type LoadOptions } from "../../src/config/load.js";
import { runTeam, type RunOptions } from "../../src/engine/run-team.js";
import { ConfigError, RuntimeError } from "../../src/errors.js";
import type { RunEvent } from "../../src/events/types.js";
import type { ModuleToolConfig } from "../../src/config/types.js";
import { defineTool } from "../../src/index.js";
import { loadToolModule, moduleTool } from "../../src/tools/module.js";
import { runCli } from "../support/cli.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** What the test modules record about themselves, shared with this process (they run in it). */
interface Probe {
  loads: number;
  calls: unknown[];
  aborted: string[];
}
const probe = (key: string): Probe => ((globalThis as Record<string, unknown>)[key] ??= { loads: 0, calls: [], aborted: [] }) as Probe;

/** An ES module tool recording into globalThis[key]; `body` is the body of `execute(args, ctx)`. */
function moduleSource(key: string, body: string, extra = ""): string {
  return `const p = (globalThis[${JSON.stringify(key)}] ??= { loads: 0, calls: [], aborted: [] });
p.loads++;
export const description = "Add two integers.";
export const parameters = { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"], additionalProperties: false };
export const effect = "read";
${extra}
export async function execute(args, ctx) {
  p.calls.push(args);
  ctx.signal.addEventListener("abort", () => p.aborted.push(String(ctx.signal.reason?.message ?? ctx.signal.reason)));
  ${body}
}
`;
}

const callTool = (name: string, args: Record<string, unknown> | string, id = "c1"): Reply => ({
  content: reactReply("CALL_TOOL", {}),
  tool_calls: [{ id, name, arguments: args }],
});
const answer = (text: string): Reply => ({ content: reactReply("ANSWER", { answer: text }) });

/** The text of the last tool results the model was sent (react: in the last assistant message). */
const lastAssistant = (body: ChatBody) => String([...(body.messages ?? [])].reverse().find((m) => m.role === "assistant")?.content ?? "");

async function serve(replies: Reply[] | ((body: ChatBody, index: number) => Reply)): Promise<OpenAIServer> {
  const server = await startOpenAIServer(Array.isArray(replies) ? { replies } : { respond: replies });
  servers.push(server);
  return server;
}

function team(url: string, tools: string, agentTools: string, files: Record<string, string>): string {
  return writeTeam(
    `version: 1
name: code-tools
models:
  default: { provider: openai, model: m, base_url: "${url}", api_key: sk-code-tools-0123456789, max_retries: 0 }
tools:
${tools}agents:
  solver: { kind: react, max_iteration: 4, tools: [${agentTools}] }
`,
    files,
  );
}

async function run(file: string, options: Partial<RunOptions> & { loadTools?: LoadOptions["tools"] } = {}) {
  const events: RunEvent[] = [];
  const { loadTools, ...rest } = options;
  const loaded = await loadTeam(file, loadTools ? { tools: loadTools } : {});
  const result = await runTeam(loaded, { input: "add 2 and 3", traceDir: tempDir(), sinks: [(e) => events.push(e)], ...rest }).result;
  return { result, events, finished: events.filter((e) => e.type === "tool.finished") };
}

describe("module tools", () => {
  it("loads the module once, lazily, and runs it in-process with the model's arguments; the result goes back to the model", async () => {
    const key = `mod-${Math.random()}`;
    const server = await serve([callTool("add", { a: 2, b: 3 }), answer("5"), callTool("add", { a: 1, b: 1 }), answer("2")]);
    const file = team(server.url, "  add: { module: ./add.mjs }\n", "add", { "add.mjs": moduleSource(key, "return { sum: args.a + args.b };") });
    const loaded = await loadTeam(file);
    // Loading the team imports nothing: the module is the run's business.
    expect(probe(key).loads).toBe(0);

    const first = await runTeam(loaded, { input: "add 2 and 3", traceDir: tempDir() }).result;
    expect(first).toMatchObject({ result_type: "answer", answer: "5" });
    expect(server.chatRequests[0]?.body?.tools).toEqual([
      {
        type: "function",
        function: {
          name: "add",
          description: "Add two integers.",
          parameters: { type: "object", properties: { a: { type: "integer" }, b: { type: "integer" } }, required: ["a", "b"], additionalProperties: false },
        },
      },
    ]);
    expect(lastAssistant(server.chatRequests[1]!.body!)).toContain('"result":{"sum":5}');

    const second = await run(file);
    expect(second.result.answer).toBe("2");
    expect(second.finished[0]).toMatchObject({ tool: "add", ok: true, result: { sum: 2 } });
    expect(probe(key)).toMatchObject({
      loads: 1,
      calls: [
        { a: 2, b: 3 },
        { a: 1, b: 1 },
      ],
    });
  });

  it("refuses arguments that fail the module's parameters before execute runs", async () => {
    const key = `mod-${Math.random()}`;
    const server = await serve([callTool("add", { a: "two", b: 3 }), answer("could not")]);
    const file = team(server.url, "  add: { module: ./add.mjs }\n", "add", { "add.mjs": moduleSource(key, "return args.a + args.b;") });
    const { finished } = await run(file);
    expect(finished[0]).toMatchObject({ ok: false, error: "invalid arguments for add: /a must be integer" });
    expect(probe(key).calls).toEqual([]);
    expect(lastAssistant(server.chatRequests[1]!.body!)).toContain("/a must be integer");
  });

  it("times a call out at the team file's timeout_ms and aborts the module's signal", async () => {
    const key = `mod-${Math.random()}`;
    const server = await serve([callTool("add", { a: 1, b: 2 }), answer("too slow")]);
    const body = "await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)); return 'late';";
    const file = team(server.url, "  add: { module: ./add.mjs, timeout_ms: 150 }\n", "add", { "add.mjs": moduleSource(key, body) });
    const started = Date.now();
    const { result, finished } = await run(file);
    expect(finished[0]).toMatchObject({ ok: false, error: "timed out after 150 ms" });
    expect(probe(key).aborted).toEqual(["timed out after 150 ms"]);
    expect(result.answer).toBe("too slow");
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("turns a throw into the call's error for the model, and caps the output", async () => {
    const key = `mod-${Math.random()}`;
    const server = await serve([callTool("add", { a: 1, b: 2 }, "c1"), callTool("add", { a: 0, b: 0 }, "c2"), answer("ok")]);
    const body = "if (args.a === 1) throw new Error('no such sum'); return 'x'.repeat(5000);";
    const file = team(server.url, "  add: { module: ./add.mjs, max_output_bytes: 100 }\n", "add", { "add.mjs": moduleSource(key, body) });
    const { result, finished } = await run(file);
    // The throw's frames inside the team's folder come with it, relative to the folder.
    expect(finished[0]).toMatchObject({ ok: false, error: expect.stringMatching(/^no such sum \[at execute \(add\.mjs:10:\d+\)\]$/) });
    expect(finished[1]).toMatchObject({ ok: true, result: expect.stringMatching(/^x{100}\n\[output truncated: 5002 bytes exceeded the cap of 100 bytes\]$/) });
    expect(lastAssistant(server.chatRequests[1]!.body!)).toContain("no such sum");
    expect(result.answer).toBe("ok");
  });

  it("gives the model a throw's type and its top frames in the team's folder, never an absolute path", async () => {
    const key = `mod-${Math.random()}`;
    const server = await serve([callTool("add", { a: 1, b: 2 }), answer("ok")]);
    const body = "return helper(args);";
    const extra = 'import { helper } from "./sum-lib.mjs";';
    const lib = "export function helper(args) {\n  return deeper(args);\n}\nfunction deeper(args) {\n  return args.missing.value;\n}\n";
    const file = team(server.url, "  add: { module: ./add.mjs }\n", "add", { "add.mjs": moduleSource(key, body, extra), "sum-lib.mjs": lib });
    const { finished } = await run(file);
    const error = String(finished[0]?.error);
    expect(error).toMatch(
      /^TypeError: Cannot read properties of undefined \(reading 'value'\) \[at deeper \(sum-lib\.mjs:5:\d+\) < helper \(sum-lib\.mjs:2:\d+\) < execute \(add\.mjs:10:\d+\)\]$/,
    );
    expect(error).not.toMatch(/\/tmp|file:/);
    expect(lastAssistant(server.chatRequests[1]!.body!)).toContain("TypeError: Cannot read properties of undefined");
  });

  it("aborts the module's signal when the run is cancelled", async () => {
    const key = `mod-${Math.random()}`;
    const server = await serve([callTool("add", { a: 1, b: 2 }), answer("never")]);
    const body = "await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve)); return 'late';";
    const file = team(server.url, "  add: { module: ./add.mjs }\n", "add", { "add.mjs": moduleSource(key, body) });
    const controller = new AbortController();
    const events: RunEvent[] = [];
    const running = runTeam(await loadTeam(file), {
      input: "go",
      traceDir: tempDir(),
      signal: controller.signal,
      sinks: [
        (e) => {
          events.push(e);
          if (e.type === "tool.started") setTimeout(() => controller.abort(), 50);
        },
      ],
    });
    const result = await running.result;
    expect(result).toMatchObject({ result_type: "error", interrupted: true });
    expect(events.find((e) => e.type === "tool.finished")).toMatchObject({ ok: false, error: "aborted" });
    expect(probe(key).aborted).toEqual(["aborted"]);
    expect(server.chatRequests).toHaveLength(1);
  });

  it("a module that does not load, or exports the wrong shapes, ends the step with a one-line error", async () => {
    const server = await serve([answer("unused")]);
    const cases: Array<[string, RegExp]> = [
      ["export const description = 'd'; export const parameters = { type: 'object' };", /tool module .*add\.mjs: execute must be a function \(got nothing\)$/],
      [
        "export const description = 'd'; export const parameters = { type: 'object' }; export const effect = 'delete'; export function execute() {}",
        /effect must be one of read, idempotent, write \(got "delete"\)$/,
      ],
      ["throw new Error('broken at import');", /tool module .*add\.mjs cannot be loaded: broken at import$/],
    ];
    for (const [source, message] of cases) {
      const file = team(server.url, "  add: { module: ./add.mjs }\n", "add", { "add.mjs": source });
      const { result, events } = await run(file);
      expect(result.result_type).toBe("error");
      expect(result.error?.message).toMatch(/^agent solver failed: /);
      expect(result.error?.message).toMatch(message);
      expect(result.error?.message).not.toContain("\n");
      expect(events.some((e) => e.type === "llm.request")).toBe(false);
    }
  });

  it("runtime validate checks the file and what it exports, each problem on one line at the module key", async () => {
    const files = {
      "script.yaml": "version: 1\nreplies: []\n",
      "good.mjs": moduleSource("unused", "return 1;"),
      "bad.mjs": "export const description = 'd'; export const parameters = { type: 'string' }; export function execute() {}",
      "thrower.mjs": "throw new Error('boom');",
    };
    const teamOf = (tools: string, listed: string, dir = tempDir()) =>
      writeTeam(
        `version: 1\nname: v\nmodels:\n  m: { provider: scripted, script: ./script.yaml }\ntools:\n${tools}agents:\n  a: { kind: react, tools: [${listed}] }\n`,
        files,
        dir,
      );

    const ok = await runCli(["validate", teamOf("  good: { module: ./good.mjs }\n", "good")]);
    expect(ok).toMatchObject({ code: 0, stderr: "" });

    // Files first: one missing, one outside the team's folder.
    const parent = tempDir();
    mkdirSync(join(parent, "team"));
    writeFileSync(join(parent, "outside.mjs"), files["good.mjs"]);
    const paths = await runCli([
      "validate",
      teamOf("  missing: { module: ./missing.mjs }\n  out: { module: ../outside.mjs }\n", "missing", join(parent, "team")),
    ]);
    expect(paths.code).toBe(2);
    expect(paths.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(/team\.yaml:6:22 \/tools\/missing\/module tool module not found: .*missing\.mjs$/),
      expect.stringMatching(
        /team\.yaml:7:18 \/tools\/out\/module tool module .*outside\.mjs is outside the team file's folder .*: move it there, or set allow_outside_paths: true$/,
      ),
    ]);

    // Then what the modules export.
    const exports = await runCli(["validate", teamOf("  bad: { module: ./bad.mjs }\n  thrower: { module: ./thrower.mjs }\n", "bad, thrower")]);
    expect(exports.code).toBe(2);
    expect(exports.stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /team\.yaml:6:18 \/tools\/bad\/module tool module .*bad\.mjs: parameters must have type: "object" \(tool arguments are a JSON object\)$/,
      ),
      expect.stringMatching(/team\.yaml:7:22 \/tools\/thrower\/module tool module .*thrower\.mjs cannot be loaded: boom$/),
    ]);
  });

  it("the team file's effect and approval win over the module's; the module's effect applies otherwise", async () => {
    const key = `mod-${Math.random()}`;
    const file = writeTeam(
      "version: 1\nname: e\nmodels:\n  m: { provider: scripted, script: ./script.yaml }\ntools:\n  own: { module: ./add.mjs }\n  told: { module: ./add.mjs, effect: write, approval: required, description: Adds. }\nagents:\n  a: { kind: react, tools: [own, told] }\n",
      { "add.mjs": moduleSource(key, "return 1;"), "script.yaml": "version: 1\nreplies: []\n" },
    );
    const loaded = await loadTeam(file);
    const own = moduleTool(loaded.tools.own as ModuleToolConfig, await loadToolModule((loaded.tools.own as ModuleToolConfig).module));
    const told = moduleTool(loaded.tools.told as ModuleToolConfig, await loadToolModule((loaded.tools.told as ModuleToolConfig).module));
    expect({ effect: own.effect, approval: own.approval, description: own.description }).toEqual({
      effect: "read",
      approval: undefined,
      description: "Add two integers.",
    });
    expect({ effect: told.effect, approval: told.approval, description: told.description }).toEqual({
      effect: "write",
      approval: "required",
      description: "Adds.",
    });
    expect(probe(key).loads).toBe(1);
  });

  it("runs the example team teams/unit-convert.yaml offline", async () => {
    const file = fileURLToPath(new URL("../../teams/unit-convert.yaml", import.meta.url));
    const events: RunEvent[] = [];
    const result = await runTeam(await loadTeam(file), { input: "10 km in miles, 25 °C in °F?", traceDir: tempDir(), sinks: [(e) => events.push(e)] }).result;
    expect(result.answer).toBe("A 10 km run is 6.21 miles, and 25 °C is 77 °F.");
    expect(events.filter((e) => e.type === "tool.finished").map((e) => (e as { result?: unknown }).result)).toEqual([
      { value: 6.21, unit: "mi" },
      { value: 77, unit: "F" },
    ]);
  });
});

describe("runTeam(team, { tools }) with defineTool()", () => {
  const lookup = (seen: Array<{ args: unknown; agent: string }>) =>
    defineTool<{ topic: string }>({
      name: "lookup",
      description: "Look up a formula.",
      parameters: { type: "object", properties: { topic: { type: "string" } }, required: ["topic"] },
      effect: "read",
      timeout_ms: 1000,
      execute: (args, ctx) => {
        seen.push({ args, agent: ctx.agent_id });
        if (args.topic === "slow") return new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve("late")));
        return { formula: `${args.topic}: pi * r^2` };
      },
    });

  it("offers the tool to an agent that lists it, validates its arguments and runs it", async () => {
    const server = await serve([
      callTool("lookup", { topic: 7 }, "bad"),
      callTool("lookup", { topic: "area" }, "good"),
      callTool("lookup", { topic: "slow" }, "slow"),
      answer("pi r squared"),
    ]);
    const file = team(server.url, "  calc: { builtin: calculator }\n", "lookup, calc", {});
    const seen: Array<{ args: unknown; agent: string }> = [];
    const tools = [lookup(seen)];
    const { result, finished } = await run(file, { tools, loadTools: tools });
    expect(result.answer).toBe("pi r squared");
    expect((server.chatRequests[0]!.body!.tools as Array<{ function: { name: string } }>).map((t) => t.function.name)).toEqual(["lookup", "calc"]);
    expect(finished.map((e) => ({ ok: e.ok, error: e.error, result: e.result }))).toEqual([
      { ok: false, error: "invalid arguments for lookup: /topic must be string", result: undefined },
      { ok: true, error: undefined, result: { formula: "area: pi * r^2" } },
      { ok: false, error: "timed out after 1000 ms", result: undefined },
    ]);
    expect(seen).toEqual([
      { args: { topic: "area" }, agent: "solver" },
      { args: { topic: "slow" }, agent: "solver" },
    ]);
  });

  it("a team listing a code tool loads only when told of it, and runs only when given it", async () => {
    const server = await serve([answer("unused")]);
    const file = team(server.url, "  calc: { builtin: calculator }\n", "lookup", {});
    await expect(loadTeam(file)).rejects.toThrow(/\/agents\/solver\/tools\/0 unknown tool 'lookup'/);
    // Told of it by name, the team loads; the run without the tool ends with one clear error.
    const { result } = await run(file, { loadTools: ["lookup"] });
    expect(result).toMatchObject({
      result_type: "error",
      error: { message: `agent solver lists tool "lookup", which neither the team file nor runTeam's tools provide` },
    });
    expect(server.chatRequests).toHaveLength(0);
  });

  it("refuses a tool whose name the team already uses, and definitions that are not tools, in one line", async () => {
    const server = await serve([answer("unused")]);
    const file = team(server.url, "  calc: { builtin: calculator }\n", "calc", {});
    const execute = () => 1;
    const params = { type: "object" };
    for (const [name, taken] of [
      ["calc", "a tool of the team file"],
      ["solver", "an agent of the team"],
      ["terminate", "a built-in tool"],
    ] as const) {
      const { result } = await run(file, { tools: [defineTool({ name, description: "", parameters: params, execute })] });
      expect(result.error?.message).toBe(`runTeam: tool "${name}" has the name of ${taken}: rename it`);
    }
    const twice = [
      defineTool({ name: "x", description: "", parameters: params, execute }),
      defineTool({ name: "x", description: "", parameters: params, execute }),
    ];
    expect((await run(file, { tools: twice })).result.error?.message).toBe(`runTeam: tool "x" has the name of another tool given to runTeam: rename it`);
    const raw = { name: "raw", execute } as unknown as ReturnType<typeof defineTool>;
    expect((await run(file, { tools: [raw] })).result.error?.message).toBe("runTeam: tools[0] is not a tool (make it with defineTool())");

    const bad: Array<[Record<string, unknown>, string]> = [
      [{ name: "has space", description: "", parameters: params, execute }, 'tool "has space": name must use letters'],
      [{ name: "t", description: "", parameters: params }, `tool "t": execute must be a function (got nothing)`],
      [{ name: "t", description: 1, parameters: params, execute }, `tool "t": description must be a string (got a number)`],
      [
        { name: "t", description: "", parameters: { type: "object", properties: { a: { type: "strng" } } }, execute },
        `tool "t": parameters is not a valid JSON Schema`,
      ],
      [{ name: "t", description: "", parameters: params, execute, timeout_ms: 0 }, `tool "t": timeout_ms must be a positive integer`],
    ];
    for (const [definition, message] of bad) {
      let thrown: unknown;
      try {
        defineTool(definition as unknown as Parameters<typeof defineTool>[0]);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toBeInstanceOf(RuntimeError);
      expect(thrown).not.toBeInstanceOf(ConfigError);
      expect((thrown as Error).message.startsWith(message), (thrown as Error).message).toBe(true);
    }
  });
});
