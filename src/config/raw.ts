/**
 * Defensive reading of the validated (or partly invalid) raw team value: the
 * reference checks run even when the schema found problems, so that every
 * problem is reported at once, and must never trip over a wrong type.
 * Once the schema accepts the value it is a RawTeam (raw-team.ts), read typed.
 */

/** A mapping of the raw team value. */
export type RawObject = Record<string, unknown>;

/** True for a plain mapping (not null, not a list). */
export function isRecord(value: unknown): value is RawObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The entries of a mapping that are themselves mappings. */
export function records(value: unknown): Array<[string, RawObject]> {
  if (!isRecord(value)) return [];
  return Object.entries(value).filter((entry): entry is [string, RawObject] => isRecord(entry[1]));
}

/** The value if it is a string. */
export function str(value: unknown): string | undefined {
  return typeof value === "string" ? value : undefined;
}

/** The string items of a list, with their indexes. */
export function strings(value: unknown): Array<[number, string]> {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item, index): Array<[number, string]> => (typeof item === "string" ? [[index, item]] : []));
}

/** The value if it is a list, else an empty one. */
export function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Keys of an agent that name another agent, per kind. */
export const AGENT_REFERENCE_KEYS: Readonly<Record<string, readonly string[]>> = {
  plan_and_solve_flow: ["planner", "executor", "replanner"],
  plan_solver: ["planner", "solver", "aggregator"],
  sop: ["strategist"],
};
