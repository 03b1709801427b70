import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { agentModel, builtinParameters, codeToolLimits, entryAgent, flowReplanner } from "../../src/config/defaults.js";
import { loadTeamFromString } from "../../src/config/load.js";
import { tempDir } from "../support/team.js";
import { BASE } from "../support/bad-team-files.js";

type Node = Record<string, unknown>;
const schema = JSON.parse(readFileSync("schemas/team.schema.json", "utf8")) as Node;

/** `key value` (value as JSON) of every property with a `default` anywhere in the schema. */
function schemaDefaults(node: unknown): string[] {
  if (typeof node !== "object" || node === null) return [];
  const out: string[] = [];
  for (const [key, value] of Object.entries(node as Node)) {
    if (key === "properties" && typeof value === "object" && value !== null) {
      for (const [name, prop] of Object.entries(value as Node)) {
        if (typeof prop === "object" && prop !== null && "default" in prop) out.push(`${name} ${JSON.stringify((prop as Node).default)}`);
      }
    }
    if (key !== "default" && key !== "examples") out.push(...schemaDefaults(value));
  }
  return out;
}

/** `key value` of every default the header of defaults.ts lists as the schema's. */
function listedDefaults(): string[] {
  const text = readFileSync("src/config/defaults.ts", "utf8");
  const section = text.slice(text.indexOf("useDefaults"), text.indexOf("Defaults that depend on other keys"));
  return section
    .split("\n")
    .filter((line) => line.startsWith(" * - "))
    .flatMap((line) => line.replace(/^ \* - [^:]+: /, "").split(/, |; /))
    .map((item) => item.replace(/^[\w ]+: /, ""))
    .map((item) => {
      const space = item.indexOf(" ");
      return `${item.slice(0, space)} ${JSON.stringify(JSON.parse(item.slice(space + 1)))}`;
    });
}

describe("src/config/defaults.ts", () => {
  it("lists exactly the defaults the schema has", () => {
    expect(new Set(listedDefaults())).toEqual(new Set(schemaDefaults(schema)));
  });

  it("gives a built-in tool the parameters the schema gives the other tools", () => {
    const defs = schema.$defs as Record<string, { properties: Record<string, Node> }>;
    for (const tool of ["commandTool", "httpTool"]) {
      expect(defs[tool]?.properties.parameters?.default, tool).toEqual(builtinParameters());
    }
    expect(builtinParameters()).not.toBe(builtinParameters());
  });

  it("gives a tool defined in code the limits the schema gives a tool of the team file", () => {
    const defs = schema.$defs as Record<string, { properties: Record<string, Node> }>;
    for (const tool of ["builtinTool", "commandTool", "httpTool", "mcpTool", "moduleTool"]) {
      expect({ timeout_ms: defs[tool]?.properties.timeout_ms?.default, max_output_bytes: defs[tool]?.properties.max_output_bytes?.default }, tool).toEqual(
        codeToolLimits(),
      );
    }
  });

  it("decides an agent's model: its own, else `default`, else the only one", () => {
    expect(agentModel("b", new Set(["a", "default"]))).toBe("b");
    expect(agentModel("missing", new Set(["a"]))).toBe("missing");
    expect(agentModel(undefined, new Set(["a", "default"]))).toBe("default");
    expect(agentModel(undefined, new Set(["only"]))).toBe("only");
    expect(agentModel(undefined, new Set(["a", "b"]))).toBeUndefined();
    expect(agentModel(undefined, new Set())).toBeUndefined();
  });

  it("decides the entry agent and a flow's replanner", () => {
    expect(entryAgent("b", ["a", "b"])).toBe("b");
    expect(entryAgent(undefined, ["a", "b"])).toBe("a");
    expect(flowReplanner({ planner: "p" })).toBe("p");
    expect(flowReplanner({ planner: "p", replanner: "r" })).toBe("r");
  });

  it("loadTeam resolves a flow's replanner to its planner unless one is named, with enable_replanner too (docs/flows.md)", async () => {
    const dir = tempDir("runtime-config-defaults-");
    const text = `${BASE}  flow: { kind: plan_and_solve_flow, planner: solver, executor: solver }
  replanning: { kind: plan_and_solve_flow, planner: solver, executor: solver, enable_replanner: true }
  named: { kind: plan_and_solve_flow, planner: solver, executor: solver, replanner: flow }
`;
    writeFileSync(join(dir, "script.yaml"), "version: 1\nreplies: []\n");
    const team = await loadTeamFromString(text, join(dir, "team.yaml"), { env: {} });
    expect(team.agents.flow).toMatchObject({ planner: "solver", replanner: "solver" });
    expect(team.agents.named).toMatchObject({ replanner: "flow" });
    expect(team.agents.replanning).toMatchObject({ enable_replanner: true, replanner: "solver" });
  });
});
