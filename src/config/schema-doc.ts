/**
 * The team file reference (docs/team-file.md), generated from the schema so
 * the two cannot drift: `runtime schema --markdown` prints it, a test checks it.
 */
import { resolveRef, teamSchema, type SchemaObject } from "./schema.js";

/** Objects of the schema in the order the reference presents them. */
const SECTIONS: Array<{ title: string; ref: string; intro?: string }> = [
  { title: "Top level", ref: "#" },
  { title: "Model: provider `openai`", ref: "#/$defs/openaiModel" },
  { title: "Model: provider `scripted`", ref: "#/$defs/scriptedModel" },
  { title: "Model: `price`", ref: "#/$defs/price" },
  { title: "Budget (of the team or of an agent)", ref: "#/$defs/budget", intro: "See docs/budgets.md." },
  { title: "Guardrail (of the team or of an agent)", ref: "#/$defs/guardrail", intro: "See docs/guardrails.md." },
  { title: "Knowledge", ref: "#/$defs/knowledge", intro: "See docs/knowledge.md." },
  { title: "Tool: `builtin`", ref: "#/$defs/builtinTool" },
  { title: "Tool: `command`", ref: "#/$defs/commandTool" },
  { title: "Tool: `http`", ref: "#/$defs/httpTool" },
  { title: "Tool: `http.http`", ref: "#/$defs/httpTool/properties/http" },
  { title: "Tool: `mcp`", ref: "#/$defs/mcpTool" },
  { title: "Tool: `mcp` over stdio (`mcp.command`)", ref: "#/$defs/mcpStdioServer", intro: "See docs/mcp.md." },
  { title: "Tool: `mcp` over Streamable HTTP (`mcp.url`)", ref: "#/$defs/mcpHttpServer" },
  { title: "Tool: `mcp`, keys of both kinds of server", ref: "#/$defs/mcpServerBase" },
  { title: "Tool: `module`", ref: "#/$defs/moduleTool", intro: "See docs/code-tools.md." },
  { title: "Tool: `a2a`", ref: "#/$defs/remoteAgentTool", intro: "See docs/protocols.md#a2a-agents-as-tools." },
  { title: "Tool: `a2a.a2a`", ref: "#/$defs/remoteAgentTool/properties/a2a" },
  { title: "Agent: keys of every kind", ref: "#/$defs/agentBase" },
  { title: "Agent: kind `react`", ref: "#/$defs/reactAgent" },
  { title: "Agent: kind `plan_and_solve`", ref: "#/$defs/planAndSolveAgent" },
  { title: "Agent: kind `plan_and_solve_flow`", ref: "#/$defs/planAndSolveFlowAgent" },
  { title: "Agent: kind `plan_solver`", ref: "#/$defs/planSolverAgent" },
  { title: "Agent: kind `sop`", ref: "#/$defs/sopAgent" },
  { title: "Workflow", ref: "#/$defs/workflow" },
  { title: "Workflow step", ref: "#/$defs/workflowStep" },
  { title: "Workflow task", ref: "#/$defs/workflowTask" },
];

/** The Markdown reference of the team file format. */
export function schemaMarkdown(): string {
  const root = teamSchema();
  const out: string[] = [
    "# team.yaml reference",
    "",
    "<!-- Generated from schemas/team.schema.json by `runtime schema --markdown`; do not edit by hand. -->",
    "",
    String(root.description ?? ""),
    "",
    "Start a team file with `# yaml-language-server: $schema=../schemas/team.schema.json` for completion and hover help in editors.",
    "Besides the schema, `runtime validate` and `loadTeam` check what a schema cannot: references to unknown models, tools, agents, workflows and assignees;",
    "agent cycles (an agent reaching itself through its tools or sub-agents); duplicate step and task ids in a workflow; that prompt, script, program and tool module files exist;",
    "that a tool's `parameters` compile as a JSON Schema; that every `${VAR}` without a default is set where it is used, and that no `${...}` is malformed.",
    "Prompts must parse as Handlebars templates (no partials). `runtime validate` (and `exec`) also check the script of each scripted model; `runtime validate` also imports each tool module and checks what it exports.",
    "",
    "Unknown keys are errors. Names (of models, tools, agents, workflows, steps and tasks) use letters, digits, `_` and `-`, start with a letter or `_`, and have at most 64 characters.",
    "",
  ];
  for (const section of SECTIONS) {
    const node = (section.ref === "#" ? root : resolveRef(section.ref)) as SchemaObject;
    out.push(`## ${section.title}`, "");
    if (section.ref !== "#" && typeof node.description === "string") out.push(node.description, "");
    const own = properties(node, section.ref === "#/$defs/agentBase");
    if (section.ref !== "#/$defs/agentBase" && typeof node.$ref === "string" && node.$ref.endsWith("agentBase")) {
      out.push(own.length === 0 ? "Only the keys of every kind." : "The keys of every kind, and:", "");
    }
    if (own.length === 0) continue;
    out.push("| key | type | default | description |", "|---|---|---|---|");
    const required = new Set((node.required as string[] | undefined) ?? []);
    // `kind` is required by the agent schema that dispatches on it.
    if (section.ref === "#/$defs/agentBase") required.add("kind");
    for (const [key, schema] of own) {
      const name = required.has(key) ? `\`${key}\` (required)` : `\`${key}\``;
      out.push(`| ${name} | ${typeOf(schema)} | ${defaultOf(schema)} | ${cell(descriptionOf(schema))} |`);
    }
    out.push("");
  }
  return `${out.join("\n").trimEnd()}\n`;
}

/** The object's own properties (the agent kinds list only theirs, not the base's). */
function properties(node: SchemaObject, includeKind: boolean): Array<[string, SchemaObject]> {
  const props = (node.properties ?? {}) as Record<string, SchemaObject>;
  return Object.entries(props).filter(([key]) => includeKind || key !== "kind" || node === teamSchema());
}

function follow(schema: SchemaObject): SchemaObject[] {
  const chain: SchemaObject[] = [schema];
  let current = schema;
  while (typeof current.$ref === "string" && chain.length < 8) {
    current = resolveRef(current.$ref) as SchemaObject;
    chain.push(current);
  }
  return chain;
}

function descriptionOf(schema: SchemaObject): string {
  return (
    follow(schema)
      .map((s) => s.description)
      .find((d): d is string => typeof d === "string") ?? ""
  );
}

function defaultOf(schema: SchemaObject): string {
  const found = follow(schema).find((s) => "default" in s);
  return found ? `\`${JSON.stringify(found.default)}\`` : "";
}

function typeOf(schema: SchemaObject): string {
  for (const s of follow(schema)) {
    if ("const" in s) return `\`${JSON.stringify(s.const)}\``;
    if (Array.isArray(s.enum)) return s.enum.map((v) => `\`${String(v)}\``).join(" \\| ");
    if (typeof s.$ref === "string" && s.$ref.endsWith("/name")) return "name";
    if (s.type === "array") {
      const items = s.items as SchemaObject | undefined;
      const ref = typeof items?.$ref === "string" && !items.$ref.endsWith("/name") ? items.$ref.split("/").pop() : undefined;
      return `list of ${ref ?? (items ? typeOf(items) : "values")}`;
    }
    if (s.type === "object") {
      const values = s.additionalProperties as SchemaObject | boolean | undefined;
      if (typeof values !== "object") return "mapping";
      const ref = typeof values.$ref === "string" ? values.$ref.split("/").pop() : undefined;
      return ref ? `mapping of name → ${ref}` : `mapping of string → ${typeOf(values)}`;
    }
    if (typeof s.type === "string") return s.type;
  }
  return "any";
}

function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\n/g, " ");
}
