/**
 * The checks a schema cannot express: references between models, tools,
 * agents and workflows, agent cycles, duplicate ids, and files that must exist.
 */
import { existsSync, readFileSync, realpathSync, statSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import type { Ajv } from "ajv";
import type { ConfigProblem } from "../errors.js";
import { describeError } from "../errors.js";
import { agentModel } from "./defaults.js";
import { AGENT_REFERENCE_KEYS, isRecord, list, records, str, strings, type RawObject } from "./raw.js";
import { pointer, type SourceMap } from "./source.js";
import { createParametersAjv, explainSchemaError } from "./tool-parameters.js";
import { didYouMean, listNames } from "./suggest.js";
import { BUILTIN_TOOL_NAMES, holderOf, isBoundToolName, isBuiltinToolName, type TeamNames } from "./tool-names.js";
import { checkGuardrails, type GuardrailContext } from "./guardrail-refs.js";

/** The kinds that run other agents and call no tool themselves, and the agent that holds the tools instead. */
const FLOW_WORKERS: Readonly<Record<string, string>> = { plan_and_solve_flow: "executor", plan_solver: "solver" };

/** What the checks learnt that loading and resolving need too. */
export interface References {
  /** Names of models and tools some agent uses: an unset `${VAR}` elsewhere is harmless. */
  usedModels: Set<string>;
  usedTools: Set<string>;
  /** Agent name → the text of its system_prompt file. */
  prompts: Map<string, string>;
}

/** An edge of the agent graph, kept with where it is written. */
interface Edge {
  to: string;
  at: string;
}

/**
 * Check every reference of a (possibly schema-invalid) team; returns the
 * problems and what resolving needs. `provided` are names of tools the
 * application gives `runTeam` in code (docs/code-tools.md): agents may list them.
 */
export function checkReferences(
  team: RawObject,
  dir: string,
  source: SourceMap,
  provided: ReadonlySet<string> = new Set(),
): { problems: ConfigProblem[]; refs: References } {
  const problems: ConfigProblem[] = [];
  const report: Report = (at, message, where = "value") => void problems.push(source.problem(at, message, where));
  const c = teamIndex(team, dir, provided, report);
  const entry = str(team.entry);
  if (entry !== undefined && !c.isAgent(entry))
    report("/entry", `unknown agent '${entry}'${didYouMean(entry, c.agentNames)}${declared("agents", c.agentNames)}`);
  for (const [name, model] of c.models) checkModel(c, name, model);

  checkKnowledge(team, dir, c.confined, report);
  checkGuardrails(team.guardrails, pointer("guardrails"), c.guarded);
  for (const [name, tool] of c.tools) {
    if (c.isAgent(name)) report(pointer("tools", name), `'${name}' names both a tool and an agent: rename one`, "key");
    checkTool(name, tool, dir, c.confined, report);
  }
  for (const [name, agent] of c.agents) {
    if (problems.length >= MAX_PROBLEMS) break;
    checkAgent(c, name, agent);
  }
  assigneeEdges(c);
  usedModelsOfModels(c);
  for (const [id, workflow] of c.workflows) if (problems.length < MAX_PROBLEMS) checkWorkflow(id, workflow, c.agentSet, report);
  for (const problem of findCycles(c.agentNames, c.edges)) report(problem.at, problem.message);
  return { problems, refs: c.refs };
}

/** A team's declarations by kind, what the checks have found so far, and where they report. */
interface TeamIndex {
  team: RawObject;
  dir: string;
  /** Prompt and script files stay in the team's folder unless the team opts out. */
  confined: string | undefined;
  report: Report;
  models: [string, RawObject][];
  tools: [string, RawObject][];
  agents: [string, RawObject][];
  workflows: [string, RawObject][];
  modelNames: string[];
  toolNames: string[];
  agentNames: string[];
  workflowNames: string[];
  // Sets, not list scans: a hostile file may declare tens of thousands of agents.
  modelSet: Set<string>;
  agentSet: Set<string>;
  workflowSet: Set<string>;
  isAgent(name: string): boolean;
  names: TeamNames;
  /** The names `knowledge_lookup` goes by: the built-in's, unless a tool of the team's own takes it, and its aliases. */
  knowledgeTools: Set<string>;
  guarded: GuardrailContext;
  refs: References;
  /** The agent graph: who calls whom, and where it is written. */
  edges: Map<string, Edge[]>;
}

function teamIndex(team: RawObject, dir: string, provided: ReadonlySet<string>, report: Report): TeamIndex {
  const models = records(team.models);
  const tools = records(team.tools);
  const agents = records(team.agents);
  const workflows = records(team.workflows);
  const modelNames = models.map(([n]) => n);
  const toolNames = tools.map(([n]) => n);
  const agentNames = agents.map(([n]) => n);
  const workflowNames = workflows.map(([n]) => n);
  const modelSet = new Set(modelNames);
  const toolSet = new Set(toolNames);
  const agentSet = new Set(agentNames);
  const isAgent = (name: string) => agentSet.has(name);
  const names: TeamNames = { tool: (n) => toolSet.has(n), code: (n) => provided.has(n), agent: isAgent };
  const refs: References = { usedModels: new Set(), usedTools: new Set(), prompts: new Map() };
  const confined = team.allow_outside_paths === true ? undefined : dir;
  const knowledgeTools = new Set(tools.filter(([, t]) => t.builtin === "knowledge_lookup").map(([n]) => n));
  if (!toolSet.has("knowledge_lookup")) knowledgeTools.add("knowledge_lookup");
  return {
    team,
    dir,
    confined,
    report,
    models,
    tools,
    agents,
    workflows,
    modelNames,
    toolNames,
    agentNames,
    workflowNames,
    modelSet,
    agentSet,
    workflowSet: new Set(workflowNames),
    isAgent,
    names,
    knowledgeTools,
    guarded: {
      dir,
      report,
      file: (path, at, what) => checkFile(path, at, what, report, { folder: confined }),
      schemaProblem: compileProblem,
      models: modelSet,
      modelNames,
      used: refs.usedModels,
      knownTool: (tool) => holderOf(tool, names) !== undefined,
    },
    refs,
    edges: new Map<string, Edge[]>(agentNames.map((n) => [n, []])),
  };
}

/** A model's script file, its fallbacks and the model that writes its summaries. */
function checkModel(c: TeamIndex, name: string, model: RawObject): void {
  const { report, modelNames } = c;
  const script = str(model.script);
  if (model.provider === "scripted" && script !== undefined) {
    checkFile(resolve(c.dir, script), pointer("models", name, "script"), "script file", report, { folder: c.confined, maxBytes: MAX_SCRIPT_BYTES });
  }
  for (const [index, other] of strings(model.fallback)) {
    const at = pointer("models", name, "fallback", index);
    if (other === name) report(at, `model '${name}' cannot be its own fallback`);
    else if (!c.modelSet.has(other)) report(at, `unknown model '${other}'${didYouMean(other, modelNames)}${declared("models", modelNames)}`);
  }
  const summariser = str((model.compaction as Record<string, unknown> | undefined)?.model);
  if (summariser !== undefined && !c.modelSet.has(summariser)) {
    report(
      pointer("models", name, "compaction", "model"),
      `unknown model '${summariser}'${didYouMean(summariser, modelNames)}${declared("models", modelNames)}`,
    );
  }
}

/** An agent's name, models, guardrails, tools, the agents and workflow it names, and its prompt file. */
function checkAgent(c: TeamIndex, name: string, agent: RawObject): void {
  const { report, modelNames, modelSet, refs } = c;
  const at = (...keys: Array<string | number>) => pointer("agents", name, ...keys);
  if (isBuiltinToolName(name)) report(at(), `agent '${name}' has the name of a built-in tool: rename it`, "key");

  // Which model an agent gets without `model:` is decided once, in defaults.ts.
  const explicit = str(agent.model);
  const model = agentModel(explicit, modelSet);
  if (model !== undefined && modelSet.has(model)) refs.usedModels.add(model);
  else if (explicit !== undefined) report(at("model"), `unknown model '${explicit}'${didYouMean(explicit, modelNames)}${declared("models", modelNames)}`);
  else if (modelNames.length > 1) report(at(), `no 'model' given and no model is named 'default': set 'model' to one of ${listNames(modelNames)}`);

  checkGuardrails(agent.guardrails, at("guardrails"), c.guarded);

  const summariser = str((agent.compaction as Record<string, unknown> | undefined)?.model);
  if (summariser !== undefined) {
    if (modelSet.has(summariser)) refs.usedModels.add(summariser);
    else report(at("compaction", "model"), `unknown model '${summariser}'${didYouMean(summariser, modelNames)}${declared("models", modelNames)}`);
  }

  const verifier = str(agent.verifier);
  if (agent.kind === "plan_and_solve" && verifier !== undefined) {
    if (modelSet.has(verifier)) refs.usedModels.add(verifier);
    else report(at("verifier"), `unknown model '${verifier}'${didYouMean(verifier, modelNames)}${declared("models", modelNames)}`);
  }

  checkAgentTools(c, name, agent);
  checkAgentNames(c, name, agent);
  readPrompt(c, name, agent);
}

/** The tools an agent lists: a team tool (used), an agent (an edge of the graph), a built-in, or unknown. */
function checkAgentTools(c: TeamIndex, name: string, agent: RawObject): void {
  const out = c.edges.get(name) ?? [];
  for (const [index, tool] of strings(agent.tools)) {
    const at = pointer("agents", name, "tools", index);
    if (c.knowledgeTools.has(tool) && !isRecord(c.team.knowledge)) {
      c.report(at, `'${tool}' searches the team's documents, but the team has none: add knowledge: {paths: [...]} at the top of the file`);
    }
    const holder = holderOf(tool, c.names);
    if (holder === "tool") c.refs.usedTools.add(tool);
    else if (holder === "agent") out.push({ to: tool, at });
    else if (holder === undefined) {
      const candidates = [...c.toolNames, ...BUILTIN_TOOL_NAMES, ...c.agentNames.filter((a) => a !== name)];
      c.report(at, `unknown tool '${tool}'${didYouMean(tool, candidates)}: expected a tool under 'tools', a built-in tool or an agent`);
    }
  }
}

/** The agents a kind names (planner, executor, ...), a sop's workflow and a flow's parser module. */
function checkAgentNames(c: TeamIndex, name: string, agent: RawObject): void {
  const { report } = c;
  const at = (...keys: Array<string | number>) => pointer("agents", name, ...keys);
  const out = c.edges.get(name) ?? [];
  // A flow only directs agents; tools given to it would never be offered to a model (docs/flows.md).
  const worker = FLOW_WORKERS[String(agent.kind)];
  if (worker !== undefined && strings(agent.tools).length > 0) {
    report(at("tools"), `a ${String(agent.kind)} calls no tools itself: give them to its ${worker} agent`);
  }
  for (const key of AGENT_REFERENCE_KEYS[String(agent.kind)] ?? []) {
    const target = str(agent[key]);
    if (target === undefined) continue;
    if (c.isAgent(target)) out.push({ to: target, at: at(key) });
    else report(at(key), `unknown agent '${target}'${didYouMean(target, c.agentNames)}${declared("agents", c.agentNames)}`);
  }

  const workflow = str(agent.workflow);
  if (agent.kind === "sop" && workflow !== undefined) {
    if (!c.workflowSet.has(workflow)) {
      report(at("workflow"), `unknown workflow '${workflow}'${didYouMean(workflow, c.workflowNames)}${declared("workflows", c.workflowNames)}`);
    }
  }

  // What the parser module exports is checked when it is loaded (src/kinds/plan-and-solve-flow/parser.ts): by `runtime validate`, or a run.
  const parser = agent.kind === "plan_and_solve_flow" ? str(agent.parser) : undefined;
  if (parser !== undefined) checkFile(resolve(c.dir, parser), at("parser"), "parser module", report, { folder: c.confined });
}

/** An agent's system_prompt file, read for resolving; or `prompt` inline, never both. */
function readPrompt(c: TeamIndex, name: string, agent: RawObject): void {
  const at = (...keys: Array<string | number>) => pointer("agents", name, ...keys);
  const promptFile = str(agent.system_prompt);
  if (promptFile !== undefined && agent.prompt !== undefined) {
    c.report(at("prompt"), "give either 'system_prompt' (a file) or 'prompt' (inline text), not both");
  } else if (promptFile !== undefined) {
    const path = resolve(c.dir, promptFile);
    if (checkFile(path, at("system_prompt"), "prompt file", c.report, { folder: c.confined, maxBytes: MAX_PROMPT_BYTES })) {
      try {
        c.refs.prompts.set(name, readFileSync(path, "utf8"));
      } catch (err) {
        c.report(at("system_prompt"), `cannot read prompt file ${path}: ${describeError(err)}`);
      }
    }
  }
}

/** A sop agent reaches the assignees of its workflow's tasks: edges of the agent graph. */
function assigneeEdges(c: TeamIndex): void {
  const workflowMap = new Map(c.workflows);
  for (const [name, agent] of c.agents) {
    const workflow = workflowMap.get(str(agent.workflow) ?? "");
    if (agent.kind !== "sop" || !workflow) continue;
    for (const [stepIndex, step] of list(workflow.steps).entries()) {
      for (const [taskIndex, task] of list(isRecord(step) ? step.tasks : undefined).entries()) {
        const assignee = isRecord(task) ? str(task.assignee) : undefined;
        const at = pointer("workflows", str(agent.workflow) ?? "", "steps", stepIndex, "tasks", taskIndex, "assignee");
        if (assignee !== undefined && c.isAgent(assignee)) c.edges.get(name)?.push({ to: assignee, at });
      }
    }
  }
}

/** A used model's fallbacks are used too (their ${VAR}s must be set), and so is the model that writes its summaries. */
function usedModelsOfModels(c: TeamIndex): void {
  const { refs, modelSet } = c;
  const fallbacks = new Map(c.models.map(([n, m]) => [n, strings(m.fallback).map(([, other]) => other)]));
  for (const used of refs.usedModels) for (const other of fallbacks.get(used) ?? []) if (modelSet.has(other)) refs.usedModels.add(other);
  for (const [n, m] of c.models) {
    const summariser = str((m.compaction as Record<string, unknown> | undefined)?.model);
    if (refs.usedModels.has(n) && summariser !== undefined && modelSet.has(summariser)) refs.usedModels.add(summariser);
  }
}

/** Past this many problems the reference checks stop: the file needs fixing first anyway. */
const MAX_PROBLEMS = 200;

type Report = (at: string, message: string, where?: "value" | "key") => void;

function checkTool(name: string, tool: RawObject, dir: string, confined: string | undefined, report: Report): void {
  const at = (...keys: Array<string | number>) => pointer("tools", name, ...keys);
  // What the module exports is checked when it is loaded (src/tools/module.ts): by `runtime validate`, or a run.
  const module = str(tool.module);
  if (module !== undefined) checkFile(resolve(dir, module), at("module"), "tool module", report, { folder: confined });
  const builtin = str(tool.builtin);
  if (builtin !== undefined && builtin !== name && isBoundToolName(builtin)) {
    report(
      at("builtin"),
      `'${builtin}' is recognised by its name and cannot be renamed: declare it as '${builtin}: {builtin: ${builtin}}' to change its limits`,
    );
  } else if (builtin !== undefined && builtin !== name && isBuiltinToolName(name)) {
    report(pointer("tools", name), `'${name}' is the name of a built-in tool; an alias of '${builtin}' needs another name`, "key");
  }
  const command = strings(tool.command);
  const program = command[0]?.[1];
  if (program?.startsWith(".")) checkFile(resolve(dir, program), at("command", 0), "program", report);
  const server = strings(isRecord(tool.mcp) ? tool.mcp.command : undefined)[0]?.[1];
  if (server?.startsWith(".")) checkFile(resolve(dir, server), at("mcp", "command", 0), "program", report);
  const cwd = str(tool.cwd);
  if (cwd !== undefined) {
    const path = resolve(dir, cwd);
    if (!existsSync(path) || !statSync(path).isDirectory()) report(at("cwd"), `directory not found: ${path}`);
  }
  if (isRecord(tool.parameters)) {
    const problem = compileProblem(tool.parameters);
    if (problem !== undefined) report(at("parameters"), `invalid JSON Schema: ${problem}`);
  }
}

let parametersAjv: Ajv | undefined;

/**
 * Compile a tool's parameter schema the way the tool layer will (ajv, strict),
 * so a broken schema is a config error and not a failure mid-run.
 */
function compileProblem(schema: RawObject): string | undefined {
  parametersAjv ??= createParametersAjv();
  try {
    parametersAjv.compile(schema);
    return undefined;
  } catch (err) {
    return explainSchemaError(describeError(err));
  } finally {
    // Forget it again: an `$id` in one file must not clash with the next load.
    parametersAjv.removeSchema(schema);
  }
}

/** Knowledge paths: existing files or folders, inside the team's folder unless it opts out. */
function checkKnowledge(team: RawObject, dir: string, confined: string | undefined, report: Report): void {
  if (!isRecord(team.knowledge)) return;
  for (const [index, given] of strings(team.knowledge.paths)) {
    const at = pointer("knowledge", "paths", index);
    const path = resolve(dir, given);
    if (existsSync(path) && statSync(path).isDirectory()) {
      if (confined !== undefined && !inside(realpathSync(path), realpathSync(confined)) && realpathSync(path) !== realpathSync(confined)) {
        report(at, `knowledge folder ${path} is outside the team file's folder ${confined}: move it there, or set allow_outside_paths: true`);
      }
    } else {
      checkFile(path, at, "knowledge file", report, { folder: confined, maxBytes: MAX_KNOWLEDGE_FILE_BYTES });
    }
  }
}

function checkWorkflow(id: string, workflow: RawObject, agents: ReadonlySet<string>, report: Report): void {
  const stepIds = new Map<string, string>();
  const taskIds = new Map<string, string>();
  for (const [stepIndex, step] of list(workflow.steps).entries()) {
    if (!isRecord(step)) continue;
    const stepAt = (...keys: Array<string | number>) => pointer("workflows", id, "steps", stepIndex, ...keys);
    const stepId = str(step.step_id);
    if (stepId !== undefined) {
      const first = stepIds.get(stepId);
      if (first !== undefined) report(stepAt("step_id"), `duplicate step_id '${stepId}' (first used at ${first})`);
      else stepIds.set(stepId, stepAt("step_id"));
    }
    for (const [taskIndex, task] of list(step.tasks).entries()) {
      if (!isRecord(task)) continue;
      const taskAt = (key: string) => stepAt("tasks", taskIndex, key);
      const taskId = str(task.task_id);
      if (taskId !== undefined) {
        const first = taskIds.get(taskId);
        if (first !== undefined) report(taskAt("task_id"), `duplicate task_id '${taskId}' (first used at ${first})`);
        else taskIds.set(taskId, taskAt("task_id"));
      }
      const assignee = str(task.assignee);
      if (assignee !== undefined && !agents.has(assignee)) {
        report(
          taskAt("assignee"),
          `unknown assignee '${assignee}'${didYouMean(assignee, agents)}: an assignee must be an agent${declared("agents", [...agents])}`,
        );
      }
    }
  }
}

/**
 * Every cycle in the agent graph, each reported once at the reference that
 * closes it. Iterative, since a hostile file may chain thousands of agents.
 */
function findCycles(agents: string[], edges: Map<string, Edge[]>): Array<{ at: string; message: string }> {
  const found: Array<{ at: string; message: string }> = [];
  const seen = new Set<string>();
  const state = new Map<string, "active" | "done">();
  for (const root of agents) {
    if (state.has(root)) continue;
    const stack: Array<{ agent: string; next: number }> = [{ agent: root, next: 0 }];
    state.set(root, "active");
    while (stack.length > 0) {
      const frame = stack[stack.length - 1]!;
      const edge = edges.get(frame.agent)?.[frame.next++];
      if (!edge) {
        state.set(frame.agent, "done");
        stack.pop();
        continue;
      }
      const status = state.get(edge.to);
      if (status === undefined) {
        state.set(edge.to, "active");
        stack.push({ agent: edge.to, next: 0 });
      } else if (status === "active") {
        const path = stack.map((f) => f.agent);
        const cycle = [...path.slice(path.indexOf(edge.to)), edge.to];
        const key = cycle.slice(0, -1).sort().join("\u0000");
        if (!seen.has(key)) {
          seen.add(key);
          const shown = cycle.length <= 12 ? cycle.join(" → ") : `${cycle.slice(0, 10).join(" → ")} → … → ${edge.to} (${cycle.length - 1} agents)`;
          found.push({ at: edge.at, message: `agent cycle: ${shown} (an agent may not reach itself through its tools or sub-agents)` });
        }
      }
    }
  }
  return found;
}

/** True when `path` is an existing file; otherwise reports why not. */
/** Largest prompt file read into a team. */
export const MAX_PROMPT_BYTES = 1024 * 1024;
/** Largest knowledge file read (src/tools/knowledge/library.ts reads with the same limit). */
export const MAX_KNOWLEDGE_FILE_BYTES = 1024 * 1024;
/** Largest scripted-model script. */
export const MAX_SCRIPT_BYTES = 8 * 1024 * 1024;

/** Where a team's files may be: its folder (unless `allow_outside_paths`), and how large. */
interface FileRule {
  folder: string | undefined;
  maxBytes?: number;
}

function checkFile(path: string, at: string, what: string, report: Report, rule: FileRule = { folder: undefined }): boolean {
  if (!isAbsolute(path) || !existsSync(path)) report(at, `${what} not found: ${path}`);
  else if (!statSync(path).isFile()) report(at, `${what} is not a file: ${path}`);
  else if (rule.folder !== undefined && !inside(realpathSync(path), realpathSync(rule.folder))) {
    report(at, `${what} ${path} is outside the team file's folder ${rule.folder}: move it there, or set allow_outside_paths: true`);
  } else if (rule.maxBytes !== undefined && statSync(path).size > rule.maxBytes) {
    report(at, `${what} ${path} is ${statSync(path).size} bytes: at most ${rule.maxBytes} are read`);
  } else return true;
  return false;
}

function inside(path: string, folder: string): boolean {
  const rel = relative(folder, path);
  return rel !== "" && !rel.startsWith("..") && !isAbsolute(rel);
}

function declared(what: string, names: string[]): string {
  if (names.length === 0) return `; no ${what} are declared`;
  if (names.length > 12) return "";
  return `; declared ${what}: ${names.join(", ")}`;
}
