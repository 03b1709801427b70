/**
 * `runtime resume TASK_ID` and `runtime approve TASK_ID [CALL]`
 * (docs/durable-runs.md): go on with a stopped run, and record a person's
 * decision on the calls a paused run waits for.
 */
import type { Command } from "commander";
import type { Budget } from "../../config/types.js";
import { RuntimeError, describeError } from "../../errors.js";
import { loadTeamOrReport } from "../load-team.js";
import { EXIT, type SetExit } from "../exit.js";

interface ResumeOptions {
  team?: string;
  budget?: string[];
  events?: string;
  progress?: boolean;
  verbose?: boolean;
  traceDir?: string;
  otel?: boolean;
}

const BUDGET_KEYS = ["max_tokens", "max_model_calls", "max_tool_calls", "max_seconds", "max_cost_usd"] as const;

export function registerResume(program: Command, setExit: SetExit): void {
  program
    .command("resume")
    .description("continue a run that stopped (killed, interrupted, paused, out of budget) from its journal")
    .argument("<task_id>", "the run to continue (a unique beginning or end of its id is enough)")
    .option("--team <file>", "team file to run it with (default: the one the run was started from)")
    .option("--budget <limit=value...>", `replace limits of the team's budget for this run (${BUDGET_KEYS.join(", ")})`)
    .option("--events <format>", "write events to stdout instead of the answer: ndjson")
    .option("--progress", "show live progress on stderr even when it is not a terminal")
    .option("--no-progress", "never show live progress")
    .option("--verbose", "in a terminal, log every state, thought and tool call instead of the live view")
    .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
    .option(
      "--otel",
      "export OpenTelemetry spans over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318 (on by itself when that variable is set)",
    )
    .action(async (taskId: string, opts: ResumeOptions) => {
      setExit(await resume(taskId, opts));
    });
}

async function resume(given: string, opts: ResumeOptions): Promise<number> {
  const fail = (message: string, code: number) => {
    process.stderr.write(`runtime resume: ${message}\n`);
    return code;
  };
  if (opts.events !== undefined && opts.events !== "ndjson") return fail(`--events must be ndjson, not '${opts.events}'`, EXIT.USAGE);
  let budget: Budget | undefined;
  try {
    budget = opts.budget ? parseBudget(opts.budget) : undefined;
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  const [{ resumeRun, storedRun, readStore }, { runAndReport }] = await Promise.all([import("../../engine/resume.js"), import("../run-report.js")]);
  let taskId: string;
  let teamFile: string | undefined;
  try {
    const store = await readStore(opts.traceDir);
    try {
      taskId = await store.runs.resolveTaskId(given);
      teamFile = opts.team ?? (await storedRun(store.runs, taskId)).team_file;
    } finally {
      await store.close();
    }
  } catch (err) {
    return fail(describeError(err), err instanceof RuntimeError && err.code === "NOT_FOUND" ? EXIT.RUN_ERROR : EXIT.USAGE);
  }
  if (!teamFile) return fail(`run ${taskId} was not started from a team file: give it with --team`, EXIT.USAGE);
  const team = await loadTeamOrReport(teamFile, "resume");
  if (!team) return EXIT.USAGE;
  return runAndReport("resume", opts, team, (base) => {
    const merged = budget ? { ...team.budget, ...budget } : undefined;
    return resumeRun(team, { ...base, taskId, ...(merged ? { budget: merged } : {}) });
  });
}

/** `max_tokens=50000` pairs into a budget. */
function parseBudget(pairs: string[]): Budget {
  const budget: Budget = {};
  for (const pair of pairs) {
    const [key, value] = pair.split("=", 2);
    if (!(BUDGET_KEYS as readonly string[]).includes(key ?? "")) throw new RuntimeError("USAGE", `--budget ${pair}: the limits are ${BUDGET_KEYS.join(", ")}`);
    const n = Number(value);
    if (!(n > 0) || !Number.isFinite(n)) throw new RuntimeError("USAGE", `--budget ${pair}: give a positive number`);
    if (key !== "max_cost_usd" && !Number.isInteger(n)) throw new RuntimeError("USAGE", `--budget ${pair}: give a whole number`);
    budget[key as (typeof BUDGET_KEYS)[number]] = n;
  }
  return budget;
}

interface ApproveOptions {
  deny?: boolean;
  reason?: string;
  traceDir?: string;
}

export function registerApprove(program: Command, setExit: SetExit): void {
  program
    .command("approve")
    .description("approve (or --deny) the tool calls a paused run waits for; then `runtime resume` continues it")
    .argument("<task_id>", "the paused run (a unique beginning or end of its id is enough)")
    .argument("[call]", "one call: its approval id or call id (default: every call the run waits for)")
    .option("--deny", "deny instead: the model gets the call's error, with the reason")
    .option("--reason <text>", "why (told to the model on a denial)")
    .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
    .action(async (taskId: string, call: string | undefined, opts: ApproveOptions) => {
      setExit(await approve(taskId, call, opts));
    });
}

async function approve(given: string, call: string | undefined, opts: ApproveOptions): Promise<number> {
  const { decideApprovals, readStore } = await import("../../engine/resume.js");
  let store: Awaited<ReturnType<typeof readStore>>;
  try {
    store = await readStore(opts.traceDir);
  } catch (err) {
    process.stderr.write(`runtime approve: ${describeError(err)}\n`);
    return EXIT.RUN_ERROR;
  }
  try {
    const decision = opts.deny ? "deny" : "approve";
    const { task_id, decided, waiting } = await decideApprovals(store.runs, given, {
      ...(call !== undefined ? { call } : {}),
      decision,
      ...(opts.reason ? { reason: opts.reason } : {}),
    });
    for (const a of decided) process.stdout.write(`${decision === "deny" ? "denied" : "approved"}: ${a.tool} (call ${a.call_id}, approval ${a.approval_id})\n`);
    const dir = opts.traceDir !== undefined ? ` --trace-dir ${opts.traceDir}` : "";
    if (waiting.length > 0)
      process.stderr.write(`runtime approve: still waiting for: ${waiting.map((a) => `${a.tool} (approval ${a.approval_id})`).join(", ")}\n`);
    process.stderr.write(`runtime approve: continue with: runtime resume ${task_id}${dir}\n`);
    return EXIT.OK;
  } catch (err) {
    process.stderr.write(`runtime approve: ${describeError(err)}\n`);
    return EXIT.RUN_ERROR;
  } finally {
    await store.close();
  }
}
