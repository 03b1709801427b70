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
 *   worked on it in this run: a call of that agent that succeeded and ended
 *   after the task went `inprogress`, or the caller is the assignee itself.
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
  /** Successful assignee calls, with when they ended. */
  const worked: Array<{ agent: string; endedAt: number }> = [];
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
    async guardAgentCall(agent, _caller, call) {
      await inTurn(async () => {
        // A replay runs in a scratch store where the plan was never created: nothing to judge against.
        const plan = await planTool.get_plan_structure(plan_id);
        const refusal = plan && sawAll(plan) ? roleRefusal(plan, agent) : undefined;
        if (refusal) throw new RuntimeError("TOOL_REFUSED", refusal);
      });
      const result = await call();
      worked.push({ agent, endedAt: ++clock });
      return result;
    },
  };
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

function workRefusal(task: TaskInfo, caller: string, since: number | undefined, worked: ReadonlyArray<{ agent: string; endedAt: number }>): string | undefined {
  // A task these rules never saw start (it went inprogress before a resume, its call replayed from the journal) is not judged.
  if (since === undefined || caller === task.assignee) return undefined;
  if (worked.some((w) => w.agent === task.assignee && w.endedAt > since)) return undefined;
  const others = [...new Set(worked.filter((w) => w.endedAt > since && w.agent !== task.assignee).map((w) => w.agent))];
  const instead = others.length > 0 ? ` (since then you asked ${others.join(", ")}, not the assignee)` : "";
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
