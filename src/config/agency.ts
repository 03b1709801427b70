/**
 * The lint for excessive agency (docs/security.md#the-lint-for-excessive-agency):
 * what loads and runs, but gives an agent more power than the team file
 * shows it guarding. `runtime validate` prints each as a warning at its line;
 * `--strict` makes them errors. Each message says what to add.
 */
import { resolve, sep } from "node:path";
import type { ConfigProblem } from "../errors.js";
import { isSecretKey } from "../redact.js";
import { cacheDroppedWarnings } from "./model-warnings.js";
import { isBuiltinToolName } from "./tool-names.js";
import { pointer, type SourceMap } from "./source.js";
import type { ResolvedTeam, ToolConfig } from "./types.js";

/** Tool types whose results come from outside the team: a page, an MCP server, a remote agent. */
const UNTRUSTED_TYPES = new Set(["http", "mcp", "a2a"]);

export function agencyWarnings(team: ResolvedTeam, raw: Record<string, unknown>, text: string, source: SourceMap): ConfigProblem[] {
  return [
    ...untrustedWithWrites(team, source),
    ...unbudgeted(team, source),
    ...writtenKeys(raw, text, source),
    ...untimedCommands(raw, team, source),
    ...writableOverLoaded(raw, team, source),
    ...cacheDroppedWarnings(team, source),
  ];
}

/** An agent that reads untrusted content and may call a write tool with no person in between. */
function untrustedWithWrites(team: ResolvedTeam, source: SourceMap): ConfigProblem[] {
  return Object.values(team.agents).flatMap((agent) => {
    const tools = agent.tools.map((name) => ({ name, config: team.tools[name] as ToolConfig | undefined }));
    const untrusted = tools.filter(({ name, config }) => (config ? UNTRUSTED_TYPES.has(config.type) : name === "knowledge_lookup"));
    const writes = tools.filter(({ name, config }) => {
      if (config === undefined || agent.approval.includes(name) || config.approval === "required") return false;
      // A built-in declared under tools: keeps its own effect; every other declared tool writes unless it says otherwise.
      return (config.effect ?? (config.type === "builtin" || isBuiltinToolName(name) ? "read" : "write")) === "write";
    });
    if (untrusted.length === 0 || writes.length === 0) return [];
    const names = (list: typeof tools) => list.map((t) => t.name).join(", ");
    return [
      source.problem(
        pointer("agents", agent.name, "tools"),
        `warning: agent ${agent.name} reads content from outside the team (${names(untrusted)}) and may call ${names(writes)}, which can change things, with nobody to approve: ` +
          `text planted there could make it call them. Add approval: {${writes.map((t) => `${t.name}: required`).join(", ")}} to the agent (or approval: required on the tool), ` +
          "or effect: read on a tool that changes nothing",
      ),
    ];
  });
}

/** Real models and no budget anywhere: a run that loops spends without a limit. */
function unbudgeted(team: ResolvedTeam, source: SourceMap): ConfigProblem[] {
  if (team.budget !== undefined || Object.values(team.agents).some((a) => a.budget !== undefined)) return [];
  const real = Object.entries(team.models).filter(([, model]) => model.provider !== "scripted");
  if (real.length === 0) return [];
  return [
    source.problem(
      pointer("models", real[0]![0]),
      `warning: the team calls real models (${real.map(([name]) => name).join(", ")}) and sets no budget: a run that loops spends without a limit. ` +
        "Add budget: {max_cost_usd: 1, max_model_calls: 50} at the top of the file, or on its agents (docs/budgets.md)",
      "key",
    ),
  ];
}

/** A credential written in the file instead of read from the environment. Its value is never printed. */
function writtenKeys(raw: Record<string, unknown>, text: string, source: SourceMap): ConfigProblem[] {
  const lines = text.split("\n");
  const out: ConfigProblem[] = [];
  const visit = (value: unknown, at: (string | number)[]): void => {
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) visit(item, [...at, i]);
    } else if (typeof value === "object" && value !== null) for (const [key, item] of Object.entries(value)) visit(item, [...at, key]);
    else if (typeof value === "string" && value !== "" && isSecretKey(String(at.at(-1)))) {
      const where = pointer(...at);
      const line = lines[source.position(where).line - 1] ?? "";
      if (line.includes("${")) return;
      const key = String(at.at(-1));
      out.push(
        source.problem(
          where,
          `warning: ${key} is written in the file, where anyone who reads it or its history has it: read it from the environment instead, with \${${envName(key)}} in place of the value`,
        ),
      );
    }
  };
  visit(raw, []);
  return out;
}

function envName(key: string): string {
  return /token/i.test(key) ? "API_TOKEN" : /authorization/i.test(key) ? "API_AUTHORIZATION" : "OPENAI_API_KEY";
}

/** A command tool left on the default timeout: a program that can run long is cut at 30 s, or one that hangs waits that long. */
function untimedCommands(raw: Record<string, unknown>, team: ResolvedTeam, source: SourceMap): ConfigProblem[] {
  const declared = typeof raw.tools === "object" && raw.tools !== null ? (raw.tools as Record<string, unknown>) : {};
  return Object.values(team.tools).flatMap((tool) => {
    const entry = declared[tool.name];
    if (tool.type !== "command" || (typeof entry === "object" && entry !== null && "timeout_ms" in entry)) return [];
    return [
      source.problem(
        pointer("tools", tool.name),
        `warning: command tool ${tool.name} runs on the default timeout_ms (${tool.timeout_ms}): say how long the program may take (timeout_ms: 120000 for a long one, less for a quick one)`,
        "key",
      ),
    ];
  });
}

/**
 * A sandbox's `writable` path over the team folder or a file the team loads
 * (a module tool or guardrail, a flow parser, a prompt template): a sandboxed
 * program could rewrite it, and the next run would load what it wrote, unconfined.
 */
function writableOverLoaded(raw: Record<string, unknown>, team: ResolvedTeam, source: SourceMap): ConfigProblem[] {
  const loaded = loadedFiles(team);
  const covers = (folder: string, path: string): boolean => path === folder || path.startsWith(folder + sep);
  const out: ConfigProblem[] = [];
  const visit = (value: unknown, at: (string | number)[]): void => {
    if (Array.isArray(value)) {
      for (const [i, item] of value.entries()) visit(item, [...at, i]);
      return;
    }
    if (typeof value !== "object" || value === null) return;
    for (const [key, item] of Object.entries(value)) visit(item, [...at, key]);
    const writable = at.at(-1) === "sandbox" ? (value as { writable?: unknown }).writable : undefined;
    if (!Array.isArray(writable)) return;
    for (const [i, given] of writable.entries()) {
      if (typeof given !== "string") continue;
      const folder = resolve(team.dir, given);
      const what = covers(folder, team.dir)
        ? "the team folder"
        : loaded
            .filter((file) => covers(folder, file.path))
            .map((file) => file.what)
            .join(", ");
      if (what === "") continue;
      out.push(
        source.problem(
          pointer(...at, "writable", i),
          `warning: writable ${given} covers ${what}, which the team loads: a sandboxed program could rewrite it, and the next run would load what it wrote, unconfined. ` +
            "Give the program a folder of its own that holds nothing the team loads (writable: [./out])",
        ),
      );
    }
  };
  visit(raw, []);
  return out;
}

/** The files a run of the team loads as code or prompt, each named as a warning names it. */
function loadedFiles(team: ResolvedTeam): { what: string; path: string }[] {
  const files: { what: string; path: string }[] = [];
  for (const tool of Object.values(team.tools)) if (tool.type === "module") files.push({ what: `the module of tool ${tool.name}`, path: tool.module });
  for (const agent of Object.values(team.agents)) {
    if (agent.system_prompt_file !== undefined) files.push({ what: `the prompt of agent ${agent.name}`, path: agent.system_prompt_file });
    if (agent.kind === "plan_and_solve_flow" && agent.parser !== undefined) files.push({ what: `the parser of agent ${agent.name}`, path: agent.parser });
    for (const guardrail of agent.guardrails ?? []) {
      if (guardrail.check.kind === "module") files.push({ what: `the module of guardrail ${guardrail.name}`, path: guardrail.check.path });
    }
  }
  // A team guardrail is in every agent's list: name each file once.
  return files.filter((file, i) => files.findIndex((other) => other.path === file.path && other.what === file.what) === i);
}
