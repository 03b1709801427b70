/**
 * The Plan Tool offered to agents as tools, one per spec method, named as in
 * the spec. Arguments are JSON-Schema-validated by the ToolBox before
 * `execute` runs; every accepted change emits `task.status` from the calling
 * agent's scope.
 */
import type { JsonSchema } from "../config/types.js";
import type { Tool, ToolContext, ToolEffect } from "../tools/types.js";
import type { CallOptions, PlanTool } from "./plan-tool.js";
import { PLAN_ID_SCHEMA, STRUCTURE_SCHEMA } from "./structure.js";
import { TASK_STATUSES, type TaskStatus } from "./types.js";

/** The spec's method names: what an agent's allow-list names to get each tool (listed once, with the other built-ins). */
import { PLAN_TOOL_NAMES, type PlanToolName } from "../config/tool-names.js";
import { RuntimeError } from "../errors.js";

export { PLAN_TOOL_NAMES, type PlanToolName };

/** The plan lives in the store, so a resume reuses recorded results; a create that lost its result is in doubt. */
const PLAN_TOOL_EFFECTS: Record<PlanToolName, ToolEffect> = {
  create_plan_from_structure: "write",
  get_task: "read",
  update_task_status: "idempotent",
  get_ready_tasks: "read",
  get_tasks_for_role: "read",
  get_plan_status: "read",
  get_plan_structure: "read",
  delete_plan: "idempotent",
};

const TIMEOUT_MS = 35_000; // above the store's 30 s busy timeout, so a lock wait fails as a lock error
const MAX_OUTPUT_BYTES = 262_144;

/**
 * An optional argument also takes null, read as omitted: the spec's defaults
 * are `None`, and models often send null for an argument they do not use.
 */
function orNull(schema: JsonSchema, description?: string): JsonSchema {
  return { anyOf: [schema, { type: "null" }], ...(description ? { description } : {}) };
}

const PLAN_ID = orNull(PLAN_ID_SCHEMA, "The plan. Optional inside a sop run: defaults to the plan of the run you work for.");
const TASK_ID = { type: "string", minLength: 1, maxLength: 128, description: "The task's task_id in the plan." };
const STATUS = { type: "string", enum: [...TASK_STATUSES] };

function params(properties: Record<string, JsonSchema>, required: string[] = []): JsonSchema {
  return { type: "object", properties, required, additionalProperties: false };
}

type Spec = { description: string; parameters: JsonSchema; run(args: Args, ctx: ToolContext): Promise<unknown> };
type Args = Record<string, unknown>;

/** The eight tools over one PlanTool. */
export function createPlanTools(planTool: PlanTool): Tool[] {
  const planOf = (args: Args, ctx: ToolContext): string => {
    if (typeof args.plan_id === "string") return args.plan_id;
    const bound = planTool.boundPlan(ctx.scope);
    if (!bound) throw new RuntimeError("TOOL_REFUSED", "plan_id is required: no sop plan is bound to this agent");
    return bound;
  };
  const emitTo = (ctx: ToolContext): CallOptions => ({ emit: (body) => ctx.emit(body) });
  /** "unknown plan X", pointing a model that guessed a plan_id (often the workflow key) at its run's plan. */
  const unknownPlan = (planId: string, ctx: ToolContext): string => {
    const bound = planTool.boundPlan(ctx.scope);
    return bound && bound !== planId ? `unknown plan ${planId}; the plan of this run is ${bound} (omit plan_id to use it)` : `unknown plan ${planId}`;
  };
  /** "its task ids: t1, t2, …" (the first 50), for a model that addressed a task by its name. */
  const taskIds = async (planId: string): Promise<string> => {
    const ids = (await planTool.get_plan_structure(planId))?.steps.flatMap((s) => s.tasks.map((t) => t.task_id)) ?? [];
    return `its task ids: ${ids.slice(0, 50).join(", ")}${ids.length > 50 ? `, … (${ids.length} in all)` : ""}`;
  };
  /** A list of tasks, refused for an unknown plan: an empty list would read as "nothing left to do". */
  const listOf = async (planId: string, ctx: ToolContext, list: () => Promise<unknown>): Promise<unknown> => {
    if ((await planTool.get_plan_status(planId)) === null) throw new RuntimeError("NOT_FOUND", unknownPlan(planId, ctx));
    return list();
  };

  const specs: Record<PlanToolName, Spec> = {
    create_plan_from_structure: {
      description:
        "Create a plan from workflow structure data; every task starts ready. Answers {ok, plan_status} or {ok: false, error} (plan_id taken, invalid data).",
      parameters: params({ plan_id: PLAN_ID_SCHEMA, structure_data: STRUCTURE_SCHEMA }, ["plan_id", "structure_data"]),
      run: (args, ctx) => planTool.createPlan(String(args.plan_id), args.structure_data, emitTo(ctx)),
    },
    get_task: {
      description: "Get one task of a plan (status, assignee, result_summary), or null when not found.",
      parameters: params({ plan_id: PLAN_ID, task_id: TASK_ID }, ["task_id"]),
      run: (args, ctx) => planTool.get_task(planOf(args, ctx), String(args.task_id)),
    },
    update_task_status: {
      description:
        "Move a task to a new status, with an optional result summary. Valid: ready→inprogress|skipped, inprogress→completed|error|ready, error→inprogress (retry)|skipped. Answers {ok, plan_status} or {ok: false, error}.",
      parameters: params(
        {
          plan_id: PLAN_ID,
          task_id: TASK_ID,
          status: STATUS,
          result_summary: orNull(
            { type: "string", maxLength: 20_000 },
            "What the task produced, or why it failed or was skipped. Omitted or null keeps the previous summary.",
          ),
        },
        ["task_id", "status"],
      ),
      run: (args, ctx) => {
        const planId = planOf(args, ctx);
        const apply = async () => {
          const outcome = await planTool.updateTask(
            planId,
            String(args.task_id),
            args.status as TaskStatus,
            typeof args.result_summary === "string" ? args.result_summary : undefined,
            emitTo(ctx),
          );
          if (outcome.ok) return outcome;
          if (outcome.error === `unknown plan ${planId}`) return { ok: false, error: unknownPlan(planId, ctx) };
          if (outcome.error.startsWith("unknown task ")) return { ok: false, error: `${outcome.error}; ${await taskIds(planId)}` };
          return outcome;
        };
        // The driver's rules (a sop run's) see the change first, in call order; the Plan Tool itself applies none.
        const rules = planTool.rulesFor(ctx.scope);
        if (rules?.plan_id !== planId) return apply();
        return rules.guardUpdate({ task_id: String(args.task_id), status: args.status as TaskStatus, caller: ctx.scope.agent_id }, apply);
      },
    },
    get_ready_tasks: {
      description: "List the plan's tasks whose status is ready. The list does not define an order: follow the workflow's steps.",
      parameters: params({ plan_id: PLAN_ID }),
      run: (args, ctx) => {
        const planId = planOf(args, ctx);
        return listOf(planId, ctx, () => planTool.get_ready_tasks(planId));
      },
    },
    get_tasks_for_role: {
      description: "List the plan's tasks assigned to a role (assignee) in a status (default ready).",
      parameters: params({ plan_id: PLAN_ID, role_id: { type: "string", minLength: 1, maxLength: 200 }, status: orNull(STATUS) }, ["role_id"]),
      run: (args, ctx) => {
        const planId = planOf(args, ctx);
        const status = typeof args.status === "string" ? (args.status as TaskStatus) : "ready";
        return listOf(planId, ctx, () => planTool.get_tasks_for_role(planId, String(args.role_id), status));
      },
    },
    get_plan_status: {
      description: "The plan's overall status: running, completed or error (null when not found).",
      parameters: params({ plan_id: PLAN_ID }),
      run: (args, ctx) => planTool.get_plan_status(planOf(args, ctx)),
    },
    get_plan_structure: {
      description: "The whole plan: steps in order, each with its tasks and their statuses and result summaries (null when not found).",
      parameters: params({ plan_id: PLAN_ID }),
      run: (args, ctx) => planTool.get_plan_structure(planOf(args, ctx)),
    },
    delete_plan: {
      description: "Delete a plan. Answers true when it existed.",
      parameters: params({ plan_id: PLAN_ID_SCHEMA }, ["plan_id"]),
      run: (args) => planTool.delete_plan(String(args.plan_id)),
    },
  };

  return PLAN_TOOL_NAMES.map((name) => ({
    name,
    description: specs[name].description,
    parameters: specs[name].parameters,
    effect: PLAN_TOOL_EFFECTS[name],
    timeout_ms: TIMEOUT_MS,
    max_output_bytes: MAX_OUTPUT_BYTES,
    execute: (args: Args, ctx: ToolContext) => specs[name].run(args, ctx),
  }));
}
