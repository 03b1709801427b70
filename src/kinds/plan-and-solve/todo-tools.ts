import { KIND_TOOL_NAMES, type KindToolName } from "../../config/tool-names.js";
import type { TodoItem, TodoStatus } from "../../events/types.js";
import type { Tool } from "../../tools/types.js";
import type { TodoDraft, TodoLoopContext } from "./todo-context.js";

/**
 * A todo tool: bound by this kind under a name the tool registry lists as a
 * kind's tool (src/config/tool-names.ts), which an allow-list names and the
 * registry resolves to this implementation (src/engine/tool-registry.ts).
 */
type TodoTool = Tool & { name: KindToolName };

/** Names of the tools that manage the todo list rather than do the work: every kind-bound tool. */
export const WRITE_TOOLS = ["write_todos", "create_todo_list"] as const satisfies readonly KindToolName[];
export const TODO_TOOL_NAMES: ReadonlySet<string> = new Set<string>(KIND_TOOL_NAMES);

/** A plan longer than this is more likely a transcript than a plan. */
export const MAX_PLAN_ITEMS = 20;

const STATUSES: TodoStatus[] = ["pending", "in_progress", "completed", "failed", "skipped", "blocked"];

/** The list lives in the run's memory: a resume runs these tools again on their recorded arguments. */
const TODO_LIMITS = { effect: "idempotent", replay: "rerun", timeout_ms: 5_000, max_output_bytes: 65_536 } as const;

/** What validate_plan answers. */
export interface PlanReview {
  valid: boolean;
  problems: string[];
  advice: string;
}

/**
 * The todo tools bound to one run's TodoLoopContext. `create_todo_list` is
 * the name docs/design/todo-list-design.md gives `write_todos`. Refusals are thrown, so the tool layer
 * hands them to the model as the call's error.
 */
export function todoTools(
  todos: TodoLoopContext,
  tools: ToolNames = { available: [], unavailable: [] },
  /** A judge of whether the items cover the request (`verify: model`); its problems join the others. */
  coverage?: (items: TodoItem[]) => Promise<string[]>,
): TodoTool[] {
  const write = (name: (typeof WRITE_TOOLS)[number]): TodoTool => ({
    name,
    description: "Create or replace the todo list: one item per concrete step, in order. Replaces the whole list.",
    parameters: {
      type: "object",
      properties: {
        todos: {
          type: "array",
          items: {
            type: "object",
            properties: {
              content: { type: "string", minLength: 1 },
              status: { type: "string", enum: STATUSES },
            },
            required: ["content"],
            // Models often add fields of their own (id, priority); they are ignored, not refused.
          },
        },
      },
      required: ["todos"],
      additionalProperties: false,
    },
    ...TODO_LIMITS,
    execute: async (args) => {
      const items = todos.replace(args["todos"] as TodoDraft[]);
      return { message: `Todo list saved with ${items.length} items.`, version: todos.version, todos: items };
    },
  });

  const update: TodoTool = {
    name: "update_todo_item",
    description:
      "Set the status of one todo item (index is 1-based): in_progress when you start it, completed when done, failed or blocked when stuck, skipped to give it up.",
    parameters: {
      type: "object",
      properties: {
        index: { type: "integer", minimum: 1 },
        status: { type: "string", enum: STATUSES },
        notes: { type: "string" },
      },
      required: ["index", "status"],
      additionalProperties: false,
    },
    ...TODO_LIMITS,
    execute: async (args) => {
      const notes = typeof args["notes"] === "string" ? args["notes"] : undefined;
      const item = todos.update(args["index"] as number, args["status"] as TodoStatus, notes);
      return { message: `Item ${item.index} is ${item.status}.`, version: todos.version, item };
    },
  };

  const validate: TodoTool = {
    name: "validate_plan",
    description: "Check the current todo list for problems (empty, too long, duplicates, items that are not actions, steps that need tools you do not have).",
    parameters: { type: "object", properties: {}, additionalProperties: false },
    ...TODO_LIMITS,
    execute: async () => {
      const review = reviewPlan(todos.items, tools);
      // The model's judgement only on a list that passed the cheap checks.
      const uncovered = review.valid && coverage ? await coverage(todos.items) : [];
      return uncovered.length === 0 ? review : { valid: false, problems: uncovered, advice: "Fix these problems with write_todos, then continue." };
    },
  };

  return [write("write_todos"), write("create_todo_list"), update, validate];
}

/** Words that cannot start an instruction: articles, pronouns, question words. */
const NOT_A_VERB = new Set(
  (
    "a an the this that these those it its they we i you my our your their there here " +
    "what why how when where which who whom whose whether step task todo item result answer"
  ).split(" "),
);

/** What a plan may use: the agent's tools, and the team's others it may not. */
export interface ToolNames {
  available: readonly string[];
  /** Tools, built-ins and agents of the team that this agent cannot call. */
  unavailable: readonly string[];
}

/** validate_plan's checks; each problem says what to fix. */
export function reviewPlan(items: TodoItem[], tools: ToolNames = { available: [], unavailable: [] }): PlanReview {
  const problems: string[] = [];
  problems.push(...feasibility(items, tools));
  if (items.length === 0) {
    problems.push("The list is empty: write the steps with write_todos, one concrete action per item.");
  }
  if (items.length > MAX_PLAN_ITEMS) {
    problems.push(`The list has ${items.length} items: merge steps so it has at most ${MAX_PLAN_ITEMS}.`);
  }
  const seen = new Map<string, number>();
  for (const item of items) {
    const text = item.content.trim();
    const key = text
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, " ")
      .trim();
    const first = seen.get(key);
    if (first !== undefined) {
      problems.push(`Items ${first} and ${item.index} say the same thing: remove or reword item ${item.index}.`);
      continue;
    }
    seen.set(key, item.index);
    const words = key.split(" ").filter(Boolean);
    const firstWord = words[0] ?? "";
    if (text.endsWith("?")) {
      problems.push(`Item ${item.index} is a question: rewrite it as an action, e.g. "Find out ...".`);
    } else if (words.length < 2 || text.length < 6) {
      problems.push(`Item ${item.index} ("${text}") is too short: say what to do and to what, e.g. "Compute the area".`);
    } else if (NOT_A_VERB.has(firstWord) || /^\d/.test(firstWord)) {
      problems.push(`Item ${item.index} does not start with a verb: begin with the action, e.g. "Compute ...".`);
    } else if (text.length > 300) {
      problems.push(`Item ${item.index} is too long: split it into smaller steps.`);
    }
  }
  return {
    valid: problems.length === 0,
    problems,
    advice:
      problems.length === 0
        ? `The plan looks good: ${items.length} actionable items. Start with item 1.`
        : "Fix these problems with write_todos, then continue.",
  };
}

/**
 * Feasibility: an item that names a tool the agent cannot call (one of the
 * team's others, or any snake_case name that is none of its tools) cannot be
 * done as written. Cheap and deterministic: names only, no model call.
 */
function feasibility(items: TodoItem[], tools: ToolNames): string[] {
  const available = new Set(tools.available);
  const unavailable = new Set(tools.unavailable);
  const problems: string[] = [];
  for (const item of items) {
    const words = item.content.match(/[\p{L}_][\p{L}\p{N}_-]*/gu) ?? [];
    const missing = [...new Set(words.filter((w) => !available.has(w) && (unavailable.has(w) || /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/.test(w))))];
    if (missing.length === 0) continue;
    const have = tools.available.filter((t) => !TODO_TOOL_NAMES.has(t));
    problems.push(
      `Item ${item.index} needs ${missing.join(", ")}, which you do not have (your tools: ${have.join(", ") || "none"}): ` +
        "plan it with your own tools, or leave it out.",
    );
  }
  return problems;
}

/** A count of items by status, for messages. */
export function describeOpen(items: TodoItem[]): string {
  return items.map((i) => `${i.index} (${i.status})`).join(", ");
}
