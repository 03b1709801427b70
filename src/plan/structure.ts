/**
 * structure_data (docs/design/plan-tool-design.md): the shape of a `workflows` entry. Validated
 * with ajv before a plan is created; invalid data creates nothing.
 */
import type { ValidateFunction } from "ajv";
import { lazily } from "../lazy.js";
import type { JsonSchema } from "../config/types.js";
import type { PlanTemplate } from "./types.js";

// A leading '_' is allowed because team files allow it in workflow, step and task names.
const ID = { type: "string", pattern: "^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$" } as const;
const TEXT = { type: "string", maxLength: 10000 } as const;

const TASK_SCHEMA = {
  type: "object",
  required: ["task_id", "name", "assignee"],
  additionalProperties: false,
  properties: {
    task_id: ID,
    name: { type: "string", minLength: 1, maxLength: 500 },
    assignee: { type: "string", minLength: 1, maxLength: 200 },
    description: TEXT,
    optional: { type: "boolean" },
  },
} as const;

/** JSON Schema of structure_data; also the `structure_data` parameter of the tool. */
export const STRUCTURE_SCHEMA: JsonSchema = {
  type: "object",
  required: ["name", "steps"],
  additionalProperties: false,
  properties: {
    /** The workflow key, as a ResolvedTeam Workflow carries it. */
    id: { type: "string", maxLength: 200 },
    workflow_template_source: { type: "string", maxLength: 200 },
    name: { type: "string", minLength: 1, maxLength: 500 },
    description: TEXT,
    steps: {
      type: "array",
      minItems: 1,
      maxItems: 1000,
      items: {
        type: "object",
        required: ["step_id", "name", "tasks"],
        additionalProperties: false,
        properties: {
          step_id: ID,
          name: { type: "string", minLength: 1, maxLength: 500 },
          description: TEXT,
          tasks: { type: "array", minItems: 1, maxItems: 10000, items: TASK_SCHEMA },
        },
      },
    },
  },
};

/** A plan_id a caller may choose: letters, digits and `_ . : -`, not starting with `. : -`, at most 128 characters. */
export const PLAN_ID_SCHEMA: JsonSchema = ID;

const ajvPackage = lazily<typeof import("ajv")>("ajv");
let validators: { structure: ValidateFunction; planId: ValidateFunction } | undefined;

/** Compiled on first use, so that loading the Plan Tool costs no ajv. */
function compiled(): { structure: ValidateFunction; planId: ValidateFunction } {
  if (!validators) {
    const ajv = new (ajvPackage().Ajv)({ strict: true, allErrors: true });
    validators = { structure: ajv.compile(STRUCTURE_SCHEMA), planId: ajv.compile(PLAN_ID_SCHEMA) };
  }
  return validators;
}

export function isValidPlanId(planId: unknown): planId is string {
  return compiled().planId(planId);
}

type RawTask = { task_id: string; name: string; assignee: string; description?: string; optional?: boolean };
type RawStep = { step_id: string; name: string; description?: string; tasks: RawTask[] };
type RawStructure = { id?: string; workflow_template_source?: string; name: string; description?: string; steps: RawStep[] };

/**
 * Parse structure_data into a PlanTemplate, or explain in one line why it is
 * invalid. Step ids are unique in a plan, and so are task ids (the API
 * addresses a task by plan_id and task_id alone).
 */
export function parseStructure(data: unknown): { ok: true; template: PlanTemplate } | { ok: false; error: string } {
  const { structure } = compiled();
  if (!structure(data)) {
    const first = structure.errors?.[0];
    return { ok: false, error: `structure_data${first?.instancePath ?? ""} ${first?.message ?? "is invalid"}` };
  }
  const raw = data as RawStructure;
  const stepIds = new Set<string>();
  const taskIds = new Set<string>();
  for (const step of raw.steps) {
    if (stepIds.has(step.step_id)) return { ok: false, error: `duplicate step_id ${step.step_id}` };
    stepIds.add(step.step_id);
    for (const task of step.tasks) {
      if (taskIds.has(task.task_id)) return { ok: false, error: `duplicate task_id ${task.task_id}` };
      taskIds.add(task.task_id);
    }
  }
  return {
    ok: true,
    template: {
      name: raw.name,
      description: raw.description ?? "",
      workflow_template_source: raw.workflow_template_source ?? raw.id ?? raw.name,
      steps: raw.steps.map((s) => ({
        step_id: s.step_id,
        name: s.name,
        description: s.description ?? "",
        tasks: s.tasks.map((t) => ({
          task_id: t.task_id,
          name: t.name,
          assignee: t.assignee,
          description: t.description ?? "",
          optional: t.optional ?? false,
        })),
      })),
    },
  };
}
