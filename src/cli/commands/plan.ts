import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Command } from "commander";
import { RuntimeError, codeOf, describeError } from "../../errors.js";
import type { PlanTool } from "../../plan/plan-tool.js";
import type { PlanInstance } from "../../plan/types.js";
import { exitStatusOf, type SetExit } from "../exit.js";

interface PlanOptions {
  traceDir?: string;
  json?: boolean;
}

/** `runtime plan list` and `runtime plan show PLAN_ID`: the Plan Tool's stored plans. */
export function registerPlan(program: Command, setExit: SetExit): void {
  const plan = program.command("plan").description("look at the plans of sop runs (the Plan Tool's store)");
  const common = (cmd: Command) =>
    cmd.option("--trace-dir <dir>", "where plans are stored (default: $RUNTIME_TRACE_DIR or .runtime)").option("--json", "print JSON instead of text");

  common(plan.command("list").description("list stored plans, newest first")).action((options: PlanOptions) =>
    report("list", setExit, async () => {
      const list = await withPlans(options, (tool) => tool.list_plans());
      if (list.length === 0) throw new RuntimeError("NOT_FOUND", `no plans in ${dir(options)}`);
      if (options.json) return list.map((p) => JSON.stringify(p)).join("\n");
      const { renderPlanList } = await import("../../plan/tree.js");
      return renderPlanList(list);
    }),
  );

  common(
    plan
      .command("show")
      .description("print a plan as a tree of steps and tasks with statuses and result summaries")
      .argument("<plan_id>", "the plan (a unique prefix is enough)"),
  ).action((planId: string, options: PlanOptions) =>
    report("show", setExit, () =>
      withPlans(options, async (tool) => {
        const found = await findPlan(tool, planId);
        if (options.json) return JSON.stringify(found, null, 2);
        const { renderPlanTree } = await import("../../plan/tree.js");
        // Where to look next: the run's trace (a plan left running by a run that died shows as unfinished there).
        const run = found.run_task_id ? `\nmade by run ${found.run_task_id}: runtime trace ${found.run_task_id}` : "";
        return `${renderPlanTree(found)}${run ? `\n${run}` : ""}`;
      }),
    ),
  );
}

async function report(name: string, setExit: SetExit, work: () => Promise<string>): Promise<void> {
  try {
    process.stdout.write(`${await work()}\n`);
  } catch (err) {
    process.stderr.write(`runtime plan ${name}: ${describeError(err)}\n`);
    setExit(exitStatusOf(codeOf(err)));
  }
}

function dir(options: PlanOptions): string {
  return resolve(options.traceDir ?? process.env["RUNTIME_TRACE_DIR"] ?? ".runtime");
}

/** Opens the store read-side (never creating it) for one command. */
async function withPlans<T>(options: PlanOptions, use: (tool: PlanTool) => Promise<T>): Promise<T> {
  // The Plan Tool (better-sqlite3) loads only when a plan command runs, so `runtime --help` starts fast.
  const { PLANS_DB, openPlanFile } = await import("../../store/sqlite/store.js");
  const file = join(dir(options), PLANS_DB);
  if (!existsSync(file)) throw new RuntimeError("NOT_FOUND", `no plans in ${dir(options)}`);
  let tool: PlanTool;
  try {
    tool = openPlanFile(file, { create: false });
  } catch (err) {
    throw new RuntimeError("NOT_FOUND", `cannot read ${file}: ${describeError(err)}`, { cause: err });
  }
  try {
    return await use(tool);
  } finally {
    tool.close();
  }
}

async function findPlan(tool: PlanTool, planId: string): Promise<PlanInstance> {
  const exact = await tool.get_plan_structure(planId);
  if (exact) return exact;
  const matches = (await tool.list_plans()).filter((p) => p.plan_id.startsWith(planId));
  const only = matches.length === 1 ? await tool.get_plan_structure(matches[0]?.plan_id ?? "") : null;
  if (only) return only;
  if (matches.length > 1) {
    throw new RuntimeError("NOT_FOUND", `plan id prefix ${planId} is ambiguous: ${matches.map((p) => p.plan_id).join(", ")}`);
  }
  throw new RuntimeError("NOT_FOUND", `no plan ${planId}`);
}
