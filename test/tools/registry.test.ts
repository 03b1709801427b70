/**
 * The tool registry (src/engine/tool-registry.ts): the one order in which a
 * name of an allow-list resolves, and the name collisions it refuses, over
 * real team files, a real MCP server over HTTP and real tool code.
 */
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { BUILTIN_TOOL_NAMES, holderOf, KIND_TOOL_NAMES, PLAN_TOOL_NAMES } from "../../src/config/tool-names.js";
import type { ResolvedTeam } from "../../src/config/types.js";
import { listAgentTools } from "../../src/engine/list-tools.js";
import { openStore } from "../../src/store/create.js";
import { prepareTools, providedTools, resolveTools } from "../../src/engine/resolve-tools.js";
import { entryOf } from "../../src/engine/tool-registry.js";
import { RuntimeError } from "../../src/errors.js";
import { defineTool } from "../../src/index.js";
import { closePlanTool, openPlanTool } from "../../src/store/sqlite/store.js";
import { McpServers } from "../../src/tools/mcp/servers.js";
import type { Tool } from "../../src/tools/types.js";
import { startHttpMcpServer, type HttpMcpServer } from "../support/mcp-servers.js";
import { tempDir, writeTeam } from "../support/team.js";
import { call, FIXTURES, makeBox } from "../support/tools.js";

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()?.();
});

const lookup = defineTool({
  name: "lookup",
  description: "Look a word up.",
  parameters: { type: "object", properties: { word: { type: "string" } }, required: ["word"] },
  effect: "read",
  execute: async ({ word }) => `${String(word)}: found`,
});

/** A kind's todo tool, as plan_and_solve binds it. */
const boundTodo: Tool = {
  name: "write_todos",
  description: "the kind's own",
  parameters: { type: "object" },
  effect: "idempotent",
  timeout_ms: 1000,
  max_output_bytes: 1000,
  execute: async () => "bound",
};

async function team(agents: string, tools = "", extra: Record<string, string> = {}): Promise<ResolvedTeam> {
  const file = writeTeam(
    `version: 1
name: registry
models:
  offline: { provider: scripted, script: ./s.yaml }
${tools ? `tools:\n${tools}` : ""}agents:
${agents}`,
    { "s.yaml": "version: 1\nreplies: []\n", ...extra },
  );
  return loadTeam(file, { tools: [lookup] });
}

/** The agent's tools as a step of a run resolves them, its kind binding `bound`. */
async function resolve(resolved: ResolvedTeam, agentName: string, bound: Tool[] = []) {
  const agent = resolved.agents[agentName]!;
  const mcp = new McpServers();
  cleanups.push(() => mcp.close());
  const dir = tempDir();
  cleanups.push(() => closePlanTool(dir));
  const cache = new Map<string, Tool>();
  const signal = new AbortController().signal;
  await prepareTools(resolved, agent, cache, mcp, signal);
  const given = providedTools(resolved, [lookup]);
  if (typeof given === "string") throw new Error(given);
  return resolveTools({
    team: resolved,
    agent,
    planTool: () => openPlanTool(dir),
    callAgent: async (name, query) => ({
      result_type: "answer",
      answer: `${name} says ${query}`,
      usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
    }),
    bound,
    cache,
    given,
    mcp,
    signal,
  });
}

describe("the tool registry", () => {
  it("resolves each name in one order: the kind's binding, the team's tools, code, agents, built-ins", async () => {
    const resolved = await team(
      `  helper: { kind: react, description: Knows things. }
  solver:
    kind: plan_and_solve
    tools: [write_todos, calculator, calc, lookup, helper, get_plan_status, terminate, validate_plan]
    approval: { lookup: required }
`,
      `  calculator: { command: [node, ./echo.mjs], description: the team's own calculator }
  calc: { builtin: calculator, timeout_ms: 1234 }
`,
      { "echo.mjs": "process.stdin.pipe(process.stdout);\n" },
    );
    const { tools, approval } = await resolve(resolved, "solver", [boundTodo]);
    // validate_plan is a kind's tool the kind did not bind: left out.
    expect(tools.map((t) => [t.name, t.description.split("\n")[0]])).toEqual([
      ["write_todos", "the kind's own"],
      ["calculator", "the team's own calculator"],
      ["calc", expect.stringMatching(/^Evaluate an arithmetic expression/)],
      ["lookup", "Look a word up."],
      ["helper", "Knows things."],
      ["get_plan_status", expect.stringMatching(/overall status/)],
      ["terminate", "Finish the task with the final answer for the user."],
    ]);
    expect(tools[2]).toMatchObject({ timeout_ms: 1234, parameters: { required: ["expression"] } });
    expect([...approval]).toEqual(["lookup"]);

    const { box } = makeBox(tools);
    const outcomes = await box.run([
      call("write_todos", {}, "1"),
      call("calc", { expression: "6 * 7" }, "2"),
      call("lookup", { word: "area" }, "3"),
      call("helper", { query: "hi" }, "4"),
      call("get_plan_status", { plan_id: "nope" }, "5"),
    ]);
    expect(outcomes.map((o) => o.result)).toEqual(["bound", { expression: "6 * 7", result: 42 }, "area: found", "helper says hi", null]);

    // `runtime tools` reads the same rows: where each comes from, a kind's tool by name only.
    const [listing] = await listAgentTools(resolved, { agents: ["solver"], stores: await openStore(tempDir()) });
    expect(listing!.tools.map((t) => [t.name, t.source])).toEqual([
      ["write_todos", "kind"],
      ["calculator", "command"],
      ["calc", "builtin"],
      ["helper", "agent"],
      ["get_plan_status", "plan tool"],
      ["terminate", "builtin"],
      ["validate_plan", "kind"],
    ]);
  });

  it("lists every built-in once, by where its code comes from, and nothing for other names", async () => {
    expect(BUILTIN_TOOL_NAMES).toHaveLength(15);
    expect(KIND_TOOL_NAMES).toEqual(["write_todos", "create_todo_list", "update_todo_item", "validate_plan"]);
    expect(PLAN_TOOL_NAMES).toHaveLength(8);
    const resolved = await team("  solver: { kind: react }\n");
    const none = new Map<string, Tool>();
    for (const name of ["toString", "__proto__", "constructor", "nothing"]) expect(entryOf(name, resolved, none)).toBeUndefined();
    expect(entryOf("calculator", resolved, none)).toMatchObject({ row: "builtin" });
    expect(entryOf("write_todos", resolved, none)).toMatchObject({ row: "kind", tool: undefined });
  });

  it("accepts from a kind only the tools the registry lists as a kind's", async () => {
    const resolved = await team("  solver: { kind: react, tools: [calculator] }\n");
    await expect(resolve(resolved, "solver", [{ ...boundTodo, name: "calculator" }])).rejects.toThrow(
      'internal error: an agent kind bound "calculator", which the tool registry does not list as a kind\'s tool',
    );
  });

  it("refuses a declared built-in the runtime does not have with CONFIG_INVALID", async () => {
    const resolved = await team("  solver: { kind: react, tools: [magic] }\n", "  magic: { builtin: calculator }\n");
    Object.assign(resolved.tools.magic!, { builtin: "magic" });
    const error = (await resolve(resolved, "solver").catch((e: unknown) => e)) as RuntimeError;
    expect(error).toBeInstanceOf(RuntimeError);
    expect(error.code).toBe("CONFIG_INVALID");
    expect(error.message).toMatch(/^tool "magic": unknown builtin "magic" \(built-in tools: calculator, terminate, write_todos, /);
  });
});

describe("name collisions", () => {
  const names = (held: { tool?: string[]; code?: string[]; agent?: string[] }) => ({
    tool: (n: string) => held.tool?.includes(n) ?? false,
    code: (n: string) => held.code?.includes(n) ?? false,
    agent: (n: string) => held.agent?.includes(n) ?? false,
  });

  it("a team's tool holds a name before code, code before an agent, an agent before a built-in", () => {
    expect(holderOf("x", names({ tool: ["x"], code: ["x"], agent: ["x"] }))).toBe("tool");
    expect(holderOf("x", names({ code: ["x"], agent: ["x"] }))).toBe("code");
    expect(holderOf("calculator", names({ agent: ["calculator"] }))).toBe("agent");
    expect(holderOf("calculator", names({}))).toBe("builtin");
    expect(holderOf("x", names({}))).toBeUndefined();
  });

  it("runTeam's tools may take no name the team, a built-in or another given tool holds", async () => {
    const resolved = await team("  helper: { kind: react }\n  solver: { kind: react, tools: [lookup] }\n", "  notes: { builtin: calculator }\n");
    const named = (name: string) => ({ ...lookup, name });
    expect(providedTools(resolved, [named("notes"), lookup])).toBe('runTeam: tool "notes" has the name of a tool of the team file: rename it');
    expect(providedTools(resolved, [named("helper"), lookup])).toBe('runTeam: tool "helper" has the name of an agent of the team: rename it');
    expect(providedTools(resolved, [named("terminate"), lookup])).toBe('runTeam: tool "terminate" has the name of a built-in tool: rename it');
    expect(providedTools(resolved, [lookup, lookup])).toBe('runTeam: tool "lookup" has the name of another tool given to runTeam: rename it');
    expect(providedTools(resolved, [])).toBe('agent solver lists tool "lookup", which neither the team file nor runTeam\'s tools provide');
    expect(providedTools(resolved, [{ name: "half" } as unknown as Tool])).toBe("runTeam: tools[0] is not a tool (make it with defineTool())");
    expect(providedTools(resolved, [lookup])).toEqual(new Map([["lookup", lookup]]));
  });

  it("two entries of one allow-list that offer the same tool are refused before the step", async () => {
    const server: HttpMcpServer = await startHttpMcpServer();
    cleanups.push(() => server.close());
    const resolved = await team(
      "  solver: { kind: react, tools: [calc, add] }\n",
      `  calc: { mcp: { url: "${server.url}", tools: [add] } }\n  add: { command: [node, ${JSON.stringify(`${FIXTURES}/echo.mjs`)}] }\n`,
    );
    await expect(resolve(resolved, "solver")).rejects.toThrow(
      'agent solver lists two tools named "add": MCP server "calc" and "add"; keep one, or narrow an MCP server with mcp.tools',
    );
  });
});
