/**
 * The workflow's rules, enforced on the strategist (docs/design/plan-tool-design.md's open
 * question on order; docs/plan-tool.md#rules-of-a-sop-run). The Plan Tool stays
 * a passive store: a `sop` run binds these rules with its plan, and the plan
 * tools and the assignee agents (as tools) hand them the strategist's calls.
 *
 * - **Role.** An assignee is called only while one of its tasks is
 *   `inprogress`: asking `analyst` while only a reviewer's task is open is
 *   refused, naming the task in progress and who it is for.
 * - **Work before completion.** A task is `completed` only after its assignee
 *   worked on it in this run: a call of that agent about that task that
 *   succeeded and ended after the task went `inprogress`, or the caller is
 *   the assignee itself.
 * - **One task per call.** A call of an assignee is about its task in
 *   progress; when it has several in progress, the query names the one it
 *   is about (its task_id or its name), else the call is refused. So one
 *   answer about t1 never completes t2.
 * - **Order.** Unless the workflow says `order: free`, a task starts
 *   (`ready → inprogress`) only when every task of the earlier steps has
 *   settled (completed, skipped or error).
 *
 * The rules judge only a plan whose every change passed through them (a
 * resumed or replayed run reuses recorded changes from its journal).
 *
 * Each refusal is thrown, so the tool layer gives it to the strategist as the
 * call's error. Checks run one at a time in call order (the calls of one reply
 * run concurrently), so "complete t1, complete t2, start t4" in one reply is
 * judged as written; an agent call is checked in that queue and then runs
 * outside it.
 */
import type { Workflow } from "../../config/types.js";
import type { PlanTool } from "../../plan/plan-tool.js";
import type { PlanInstance, PlanRules, TaskInfo } from "../../plan/types.js";
import { RuntimeError } from "../../errors.js";

const SETTLED = new Set(["completed", "skipped", "error"]);

/** The rules of one sop run over its plan. */
export function sopRules(planTool: PlanTool, plan_id: string, workflow: Workflow): PlanRules {
  /** A logical clock: one tick per accepted change and per finished agent call. */
  let clock = 0;
  /** When each task last went inprogress. */
  const startedAt = new Map<string, number>();
  /** Every task's status as these rules saw it change ("ready" until then). */
  const seen = new Map<string, string>();
  /**
   * The rules judge only a plan whose every change they saw: when a resumed
   * or replayed run reused recorded plan changes from its journal, those never
   * passed here, and judging the rest against half a history would refuse
   * work the run did.
   */
  const sawAll = (plan: PlanInstance) => tasksOf(plan).every((t) => t.status === (seen.get(t.task_id) ?? "ready"));
  /** Successful assignee calls, the tasks they were about (undefined: not judged) and when they ended. */
  const worked: Worked[] = [];
  let queue: Promise<unknown> = Promise.resolve();
  const inTurn = <T>(work: () => Promise<T>): Promise<T> => {
    const result = queue.then(work, work);
    queue = result.catch(() => undefined);
    return result;
  };
  const read = async (): Promise<PlanInstance> => {
    const plan = await planTool.get_plan_structure(plan_id);
    if (!plan) throw new RuntimeError("NOT_FOUND", `plan ${plan_id} is gone`);
    return plan;
  };

  return {
    plan_id,
    guardUpdate(change, apply) {
      return inTurn(async () => {
        const plan = await read();
        const task = tasksOf(plan).find((t) => t.task_id === change.task_id);
        // An unknown task or an invalid transition is the store's to refuse.
        if (task && sawAll(plan)) {
          const refusal =
            change.status === "inprogress" && task.status === "ready"
              ? orderRefusal(plan, task, workflow)
              : change.status === "completed" && task.status === "inprogress"
                ? workRefusal(task, change.caller, startedAt.get(task.task_id), worked)
                : undefined;
          if (refusal) throw new RuntimeError("TOOL_REFUSED", refusal);
        }
        const outcome = await apply();
        if (outcome.ok) {
          seen.set(change.task_id, change.status);
          if (change.status === "inprogress") startedAt.set(change.task_id, ++clock);
        }
        return outcome;
      });
    },
    async guardAgentCall(agent, _caller, query, call) {
      const about = await inTurn(async () => {
        // A replay runs in a scratch store where the plan was never created: nothing to judge against.
        const plan = await planTool.get_plan_structure(plan_id);
        if (!plan || !sawAll(plan)) return undefined;
        const refusal = roleRefusal(plan, agent);
        if (refusal) throw new RuntimeError("TOOL_REFUSED", refusal);
        return taskOfCall(plan, agent, query);
      });
      const result = await call();
      worked.push({ agent, ...(about ? { tasks: about } : {}), endedAt: ++clock });
      return result;
    },
  };
}

interface Worked {
  agent: string;
  /** The tasks the call was about; absent when the rules did not judge it (an assignee outside the workflow, a replay). */
  tasks?: string[];
  endedAt: number;
}

/**
 * The tasks a call of `agent` is about: its one task in progress, or, with
 * several, those the query names (task_id or name, as a word); a query that
 * names none of several is refused, so no answer counts for a task it was
 * not asked about.
 */
function taskOfCall(plan: PlanInstance, agent: string, query: string): string[] | undefined {
  const mine = tasksOf(plan).filter((t) => t.assignee === agent && t.status === "inprogress");
  if (mine.length === 0) return undefined;
  if (mine.length === 1) return [mine[0]!.task_id];
  const named = mine.filter((t) => namesTask(query, t));
  if (named.length > 0) return named.map((t) => t.task_id);
  const list = mine.map((t) => `${t.task_id} "${t.name}"`).join(", ");
  throw new RuntimeError(
    "TOOL_REFUSED",
    `refused: ${agent} has ${mine.length} tasks in progress (${list}): name the task the query is about (its task_id, e.g. "${mine[0]!.task_id}: ..."), one task per call.`,
  );
}

function namesTask(query: string, task: TaskInfo): boolean {
  const words = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}_-]+/gu) ?? [];
  const said = ` ${words(query).join(" ")} `;
  return said.includes(` ${task.task_id.toLowerCase()} `) || said.includes(` ${words(task.name).join(" ")} `);
}

function tasksOf(plan: PlanInstance): TaskInfo[] {
  return plan.steps.flatMap((s) => s.tasks);
}

function orderRefusal(plan: PlanInstance, task: TaskInfo, workflow: Workflow): string | undefined {
  if (workflow.order === "free") return undefined;
  const index = plan.steps.findIndex((s) => s.step_id === task.step_id);
  const open = plan.steps.slice(0, Math.max(index, 0)).flatMap((s) => s.tasks.filter((t) => !SETTLED.has(t.status)).map((t) => ({ step: s, task: t })));
  if (open.length === 0) return undefined;
  const step = plan.steps[index];
  const list = open.map(({ step: s, task: t }) => `${t.task_id} of step ${s.step_id} (${t.status})`).join(", ");
  return `refused: task ${task.task_id} belongs to step ${step?.step_id} "${step?.name}", and the earlier steps are not settled: ${list}. Complete, skip or fail those first (the workflow's steps run in order).`;
}

function workRefusal(task: TaskInfo, caller: string, since: number | undefined, worked: readonly Worked[]): string | undefined {
  // A task these rules never saw start (it went inprogress before a resume, its call replayed from the journal) is not judged.
  if (since === undefined || caller === task.assignee) return undefined;
  const after = worked.filter((w) => w.endedAt > since);
  if (after.some((w) => w.agent === task.assignee && (w.tasks === undefined || w.tasks.includes(task.task_id)))) return undefined;
  const others = [...new Set(after.filter((w) => w.agent !== task.assignee).map((w) => w.agent))];
  const elsewhere = [...new Set(after.filter((w) => w.agent === task.assignee).flatMap((w) => w.tasks ?? []))];
  const instead =
    elsewhere.length > 0
      ? ` (its answers since were about ${elsewhere.join(", ")})`
      : others.length > 0
        ? ` (since then you asked ${others.join(", ")}, not the assignee)`
        : "";
  return `refused: task ${task.task_id} "${task.name}" is assigned to ${task.assignee}, who has not worked on it since it went inprogress${instead}. Ask ${task.assignee} to do it, then mark it completed with what it answered.`;
}

function roleRefusal(plan: PlanInstance, agent: string): string | undefined {
  const tasks = tasksOf(plan);
  if (!tasks.some((t) => t.assignee === agent)) return undefined;
  if (tasks.some((t) => t.assignee === agent && t.status === "inprogress")) return undefined;
  const inProgress = tasks.filter((t) => t.status === "inprogress");
  const now = inProgress.length > 0 ? `in progress: ${inProgress.map((t) => `${t.task_id} → ${t.assignee}`).join(", ")}` : "no task is in progress";
  const mine = tasks.filter((t) => t.assignee === agent && !SETTLED.has(t.status)).map((t) => t.task_id);
  const start =
    mine.length > 0
      ? `mark its task (${mine.join(", ")}) inprogress first, or ask the assignee of the task you are working on`
      : `it has no open task; ask the assignee of the task you are working on`;
  return `refused: ${agent} has no task in progress (${now}): ${start}.`;
}
