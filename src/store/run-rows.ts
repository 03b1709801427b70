/**
 * What both run adapters share, free of either database: a `runs` row as
 * a summary, and the rule that picks the run a shortened id names.
 */
import { RuntimeError } from "../errors.js";
import type { Usage } from "../events/types.js";
import type { RunSummary } from "./runs.js";

/** A row of the `runs` table, as SQLite and PostgreSQL return it. */
export interface RunRow {
  task_id: string;
  agent_id: string;
  input: string;
  started_at: string;
  finished_at: string | null;
  result_type: string | null;
  answer: string | null;
  error: string | null;
  usage_json: string | null;
  caller: string | null;
}

/** A run's summary from its row. */
export function toSummary(row: RunRow): RunSummary {
  const summary: RunSummary = {
    task_id: row.task_id,
    agent_id: row.agent_id,
    input: row.input,
    started_at: row.started_at,
  };
  if (row.finished_at !== null) summary.finished_at = row.finished_at;
  if (row.result_type === "answer" || row.result_type === "error" || row.result_type === "paused" || row.result_type === "blocked")
    summary.result_type = row.result_type;
  if (row.answer !== null) summary.answer = row.answer;
  if (row.error !== null) summary.error = row.error;
  if (row.usage_json !== null) summary.usage = JSON.parse(row.usage_json) as Usage;
  if (row.caller !== null) summary.caller = row.caller;
  return summary;
}

/**
 * The one id a shortened `given` names among the stored ids it begins or
 * ends (`matches`, in id order): ids made by the runtime begin with the
 * time, so runs made close together share their first digits and differ in
 * their last (docs/design/journal.md#ids).
 */
export function pickTaskId(given: string, matches: readonly string[], where: string): string {
  // An empty part begins every id: it names none.
  if (given === "") matches = [];
  if (matches.length === 1) return matches[0]!;
  if (matches.length > 1) {
    throw new RuntimeError(
      "NOT_FOUND",
      `task_id ${given} is ambiguous: it begins or ends ${matches.slice(0, 5).join(", ")}${matches.length > 5 ? ", ..." : ""}`,
    );
  }
  throw new RuntimeError("NOT_FOUND", `no run with task_id ${given} in ${where}`);
}
