/**
 * The names an agent's `tools` list may use, and the one order in which a
 * name resolves (docs/design/engine.md#tool-calls). Validation
 * (references.ts), `runTeam`'s check of the tools given in code, and the
 * engine's tool registry (src/engine/tool-registry.ts, which maps each of
 * these names to its code) all read them from here.
 */

/** What the runtime knows of a built-in tool before loading any code. */
interface BuiltinFacts {
  /**
   * Where its implementation comes from, as `runtime tools` shows it: the
   * runtime's own code (`builtin`), the Plan Tool (`plan tool`), or the
   * agent's kind, which binds it at run time (`kind`: plan_and_solve's todo
   * tools, bound to its todo list).
   */
  source: "builtin" | "plan tool" | "kind";
  /**
   * The agent's kind reads its calls (`terminate` ends the run, the todo
   * tools drive plan_and_solve): declared under `tools:` it keeps its name.
   */
  bound?: true;
}

/**
 * The built-in tools, in the order the schema's `builtin` enum lists them
 * (test/config/schema.test.ts keeps the two equal). Plan Tool methods are
 * named as in the Plan Tool's spec; src/plan/tools.ts implements them.
 */
export const BUILTIN_TOOLS = {
  calculator: { source: "builtin" },
  terminate: { source: "builtin", bound: true },
  write_todos: { source: "kind", bound: true },
  create_todo_list: { source: "kind", bound: true },
  update_todo_item: { source: "kind", bound: true },
  validate_plan: { source: "kind", bound: true },
  knowledge_lookup: { source: "builtin" },
  create_plan_from_structure: { source: "plan tool" },
  get_task: { source: "plan tool" },
  update_task_status: { source: "plan tool" },
  get_ready_tasks: { source: "plan tool" },
  get_tasks_for_role: { source: "plan tool" },
  get_plan_status: { source: "plan tool" },
  get_plan_structure: { source: "plan tool" },
  delete_plan: { source: "plan tool" },
} as const satisfies Record<string, BuiltinFacts>;

export type BuiltinToolName = keyof typeof BUILTIN_TOOLS;

type NamesOf<Source extends BuiltinFacts["source"]> = {
  [K in BuiltinToolName]: (typeof BUILTIN_TOOLS)[K]["source"] extends Source ? K : never;
}[BuiltinToolName];

/** The Plan Tool's methods. */
export type PlanToolName = NamesOf<"plan tool">;
/** The tools an agent's kind binds at run time. */
export type KindToolName = NamesOf<"kind">;

export const BUILTIN_TOOL_NAMES: readonly BuiltinToolName[] = Object.keys(BUILTIN_TOOLS) as BuiltinToolName[];
export const PLAN_TOOL_NAMES: readonly PlanToolName[] = BUILTIN_TOOL_NAMES.filter((n): n is PlanToolName => BUILTIN_TOOLS[n].source === "plan tool");
export const KIND_TOOL_NAMES: readonly KindToolName[] = BUILTIN_TOOL_NAMES.filter((n): n is KindToolName => BUILTIN_TOOLS[n].source === "kind");

/** True when `name` is a built-in tool. */
export function isBuiltinToolName(name: string): name is BuiltinToolName {
  return Object.hasOwn(BUILTIN_TOOLS, name);
}

/** True when the agent's kind binds the tool `name` itself. */
export function isKindToolName(name: string): name is KindToolName {
  return isBuiltinToolName(name) && BUILTIN_TOOLS[name].source === "kind";
}

/** True when the agent's kind reads calls of `name`, so it cannot be declared under another name. */
export function isBoundToolName(name: string): boolean {
  return isBuiltinToolName(name) && "bound" in BUILTIN_TOOLS[name];
}

/** What a name of an allow-list can stand for. */
export type NameHolder = "tool" | "code" | "agent" | "builtin";

/** The names a team holds: its file's tools and agents, and the tools given to `runTeam` in code. */
export interface TeamNames {
  tool(name: string): boolean;
  code(name: string): boolean;
  agent(name: string): boolean;
}

/**
 * What holds `name`, in the one resolution order: a tool under the team's
 * `tools:`, a tool given in code (docs/code-tools.md), an agent of the team,
 * a built-in; undefined when none does. (At run time a kind-bound name the
 * agent's kind binds comes before all of them: src/engine/tool-registry.ts.)
 * The others are refused at load time where they would clash (references.ts)
 * or when `runTeam` is given its tools (src/engine/resolve-tools.ts), so the
 * order decides only between a team's tool and a built-in of the same name:
 * the team's wins.
 */
export function holderOf(name: string, names: TeamNames): NameHolder | undefined {
  if (names.tool(name)) return "tool";
  if (names.code(name)) return "code";
  if (names.agent(name)) return "agent";
  if (isBuiltinToolName(name)) return "builtin";
  return undefined;
}

/** A holder as the messages of the collision checks name it. */
export const HOLDER_NAMES: Record<NameHolder, string> = {
  tool: "a tool of the team file",
  code: "another tool given to runTeam",
  agent: "an agent of the team",
  builtin: "a built-in tool",
};
