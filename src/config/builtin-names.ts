/** The Plan Tool's methods (seed 003), named as in its spec; src/plan/tools.ts implements them. */
export const PLAN_TOOL_NAMES = [
  "create_plan_from_structure",
  "get_task",
  "update_task_status",
  "get_ready_tasks",
  "get_tasks_for_role",
  "get_plan_status",
  "get_plan_structure",
  "delete_plan",
] as const;

export type PlanToolName = (typeof PLAN_TOOL_NAMES)[number];

/**
 * Names an agent's `tools` list may use without declaring them under `tools:`.
 * The schema's `builtin` enum lists the same names (a test keeps them equal).
 */
export const BUILTIN_TOOL_NAMES = [
  "calculator",
  "terminate",
  "write_todos",
  "create_todo_list",
  "update_todo_item",
  "validate_plan",
  "knowledge_lookup",
  ...PLAN_TOOL_NAMES,
] as const;

export type BuiltinToolName = (typeof BUILTIN_TOOL_NAMES)[number];

/** True when `name` is a built-in tool. */
export function isBuiltinToolName(name: string): name is BuiltinToolName {
  return (BUILTIN_TOOL_NAMES as readonly string[]).includes(name);
}

/**
 * Built-ins the agent kinds recognise by name (a react `terminate` ends the
 * run; plan_and_solve binds its todo tools): declared under `tools:` they keep
 * their own name, since an alias would not be recognised.
 */
export const NAME_BOUND_BUILTINS: ReadonlySet<string> = new Set(["terminate", "write_todos", "create_todo_list", "update_todo_item", "validate_plan"]);
