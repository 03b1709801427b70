/**
 * Heavy packages load when a run needs them (docs/design/engine.md#start-up):
 * a run of a team without MCP servers never loads the MCP client, and one
 * with an MCP server does; `runtime validate` of a scripted team loads none
 * of ajv's compiler (both validators come precompiled from the build), nor
 * does `runtime exec` of a team whose tools are built in, which loads only
 * the Handlebars runtime for its default prompt, nor the code of tools its
 * agents do not list (command and http tools, the Plan Tool's). Each case runs in a child process, which lists the
 * scripts V8 parsed (the inspector replays them all on Debugger.enable).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

async function scriptsLoadedBy(team: string, input: string): Promise<{ answer: string; scripts: string[] }> {
  const program = `
    import { Session } from "node:inspector/promises";
    const { loadTeam, runTeam } = await import(${JSON.stringify(`${ROOT}dist/index.js`)});
    const team = await loadTeam(${JSON.stringify(`${ROOT}teams/${team}`)});
    const result = await runTeam(team, { input: ${JSON.stringify(input)}, trace: false }).result;
    const session = new Session();
    session.connect();
    const scripts = [];
    session.on("Debugger.scriptParsed", (m) => scripts.push(m.params.url));
    await session.post("Debugger.enable");
    process.stdout.write(JSON.stringify({ answer: result.answer ?? result.error?.message, scripts }));
    process.exit(0);
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", program], { cwd: ROOT, maxBuffer: 16 << 20 });
  return JSON.parse(stdout) as { answer: string; scripts: string[] };
}

const ajvCompiler = (scripts: string[]) => scripts.filter((url) => /node_modules\/ajv\/dist\/(core|compile\/)/.test(url));

/** A `runtime` command in a child process with the list-scripts preload: its output and the scripts V8 parsed. */
async function scriptsLoadedByCli(args: string[]): Promise<{ stdout: string; scripts: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), "lazy-"));
  try {
    const file = join(dir, "scripts.txt");
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", `${ROOT}test/support/list-scripts.mjs`, `${ROOT}bin/runtime.js`, ...args], {
      cwd: ROOT,
      env: { ...process.env, LIST_SCRIPTS_FILE: file, RUNTIME_TRACE_DIR: join(dir, "traces") },
    });
    return { stdout, scripts: readFileSync(file, "utf8").split("\n") };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const mcpScripts = (scripts: string[]) => scripts.filter((url) => /node_modules\/(@modelcontextprotocol|zod)\//.test(url));

describe("lazy loading", () => {
  it("a run without MCP servers loads neither the MCP SDK nor zod; a run with one loads them", async () => {
    const plain = await scriptsLoadedBy("circle-react.yaml", "What is the area of a circle of radius 2?");
    expect(plain.answer).toMatch(/area of/);
    expect(plain.scripts.some((url) => url.includes("/dist/engine/run-team.js"))).toBe(true);
    expect(mcpScripts(plain.scripts)).toEqual([]);
    // Its model declares no context_window: the tokenizer (a second to load its ranks) is never loaded (docs/context.md).
    expect(plain.scripts.filter((url) => url.includes("/js-tiktoken/"))).toEqual([]);

    const mcp = await scriptsLoadedBy("mcp-files.yaml", "Which files are in the data directory?");
    expect(mcp.scripts.some((url) => url.includes("@modelcontextprotocol/sdk/dist/esm/client/index.js"))).toBe(true);
  }, 60_000);

  it("runtime validate of a scripted team loads none of ajv's compiler (the team and script validators come precompiled)", async () => {
    const { stdout, scripts } = await scriptsLoadedByCli(["validate", "teams/circle-react.yaml"]);
    expect(stdout).toContain("ok");
    expect(scripts.some((url) => url.endsWith("/dist/models/script-validator.cjs"))).toBe(true);
    expect(scripts.some((url) => url.endsWith("/dist/config/team-validator.cjs"))).toBe(true);
    expect(ajvCompiler(scripts)).toEqual([]);
  }, 30_000);

  it("runtime exec of a team whose tools are built in loads neither ajv's nor Handlebars' compiler (validators and prompt come precompiled)", async () => {
    const { stdout, scripts } = await scriptsLoadedByCli(["exec", "teams/circle-react.yaml", "What is the area of a circle of radius 2?"]);
    expect(stdout).toMatch(/area of/);
    expect(scripts.some((url) => url.endsWith("/dist/tools/builtin/calculator-arguments.cjs"))).toBe(true);
    expect(ajvCompiler(scripts)).toEqual([]);
    // The calculator evaluates with its own small evaluator (src/tools/builtin/expression.ts), loaded with it.
    expect(scripts.some((url) => url.endsWith("/dist/tools/builtin/expression.js"))).toBe(true);
    // The code of tools the team does not list stays out: command and http tools (node:child_process,
    // node:http, node:https, node:dns), the Plan Tool's methods, knowledge_lookup.
    const toolCode = (urls: string[]) =>
      urls
        .filter((url) => /\/dist\/(tools\/(command|http|from-config|builtin\/knowledge-lookup)|plan\/tools)\.js$/.test(url))
        .map((url) => url.replace(/.*\/dist\//, ""));
    expect(toolCode(scripts)).toEqual([]);
    // Of the CLI's commands, only exec's module: the others are loaded for --help or a mistyped name.
    expect(scripts.filter((url) => url.includes("/dist/cli/commands/")).map((url) => url.replace(/.*\/dist\//, ""))).toEqual(["cli/commands/exec.js"]);
    // A team that lists knowledge_lookup loads its code (and only that).
    const planned = await scriptsLoadedByCli(["exec", "teams/circle-plan.yaml", "What are the area and circumference of a circle with radius 5 meters?"]);
    expect(toolCode(planned.scripts)).toEqual(["tools/builtin/knowledge-lookup.js"]);
    // The react prompt comes precompiled too: the Handlebars runtime, not its compiler.
    expect(scripts.filter((url) => url.includes("node_modules/handlebars/")).map((url) => url.replace(/.*\/node_modules\//, ""))).toEqual([
      "handlebars/dist/handlebars.runtime.min.js",
    ]);
  }, 30_000);
});
