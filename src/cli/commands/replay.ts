/**
 * `runtime replay TASK_ID` and `runtime diff TASK_A TASK_B`
 * (docs/durable-runs.md#replay-and-diff): run a stored run again offline and
 * say whether the same events come out; say where two runs first differ.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Command } from "commander";
import type { RunEvent } from "../../events/types.js";
import { describeError } from "../../errors.js";
import type { Divergence } from "../../trace/compare.js";
import { loadTeamOrReport } from "../load-team.js";
import { EXIT, type SetExit } from "../exit.js";

interface ReplayOptions {
  team?: string;
  traceDir?: string;
}

export function registerReplay(program: Command, setExit: SetExit): void {
  program
    .command("replay")
    .description("run a stored run again offline from its journal (no model asked, no tool run) and compare the events")
    .argument("<task_id>", "the run (a unique beginning or end of its id is enough)")
    .option("--team <file>", "team file (default: the one the run was started from)")
    .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
    .action(async (taskId: string, opts: ReplayOptions) => {
      setExit(await replay(taskId, opts));
    });
}

async function replay(given: string, opts: ReplayOptions): Promise<number> {
  const [{ replayRun, storedRun, readStore }, { resolveTraceDir }, { compareEvents }] = await Promise.all([
    import("../../engine/resume.js"),
    import("../../engine/trace-dir.js"),
    import("../../trace/compare.js"),
  ]);
  const from = resolveTraceDir(opts.traceDir);
  let taskId: string;
  let stored: RunEvent[];
  let teamFile: string | undefined;
  try {
    const store = await readStore(from);
    try {
      taskId = await store.runs.resolveTaskId(given);
      stored = await store.runs.eventsOfTask(taskId);
      teamFile = opts.team ?? (await storedRun(store.runs, taskId)).team_file;
    } finally {
      await store.close();
    }
  } catch (err) {
    process.stderr.write(`runtime replay: ${describeError(err)}\n`);
    return EXIT.RUN_ERROR;
  }
  if (!teamFile) {
    process.stderr.write(`runtime replay: run ${taskId} was not started from a team file: give it with --team\n`);
    return EXIT.USAGE;
  }
  const team = await loadTeamOrReport(teamFile, "replay");
  if (!team) return EXIT.USAGE;
  const scratch = mkdtempSync(join(tmpdir(), "runtime-replay-"));
  try {
    const replayed: RunEvent[] = [];
    const run = await replayRun(team, { taskId, from, traceDir: scratch, sinks: [(e) => replayed.push(e)] });
    const result = await run.result;
    const divergence = compareEvents(stored, replayed);
    if (!divergence) {
      process.stdout.write(`identical: ${replayed.length} events, ${result.result_type === "answer" ? "the same answer" : `the same ${result.result_type}`}\n`);
      return EXIT.OK;
    }
    process.stdout.write(report("the replay diverges", divergence));
    return EXIT.RUN_ERROR;
  } catch (err) {
    process.stderr.write(`runtime replay: ${describeError(err)}\n`);
    return EXIT.RUN_ERROR;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

export function registerDiff(program: Command, setExit: SetExit): void {
  program
    .command("diff")
    .description("show where two runs first differ: a request, a model reply, a tool call, the answer")
    .argument("<task_a>", "the first run (a unique beginning or end of its id is enough)")
    .argument("<task_b>", "the second run")
    .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
    .action(async (a: string, b: string, opts: { traceDir?: string }) => {
      setExit(await diff(a, b, opts));
    });
}

async function diff(givenA: string, givenB: string, opts: { traceDir?: string }): Promise<number> {
  const [{ readStore }, { diffJournals }] = await Promise.all([import("../../engine/resume.js"), import("../../trace/compare.js")]);
  try {
    const store = await readStore(opts.traceDir);
    try {
      const runs = store.runs;
      const [a, b] = await Promise.all([runs.resolveTaskId(givenA), runs.resolveTaskId(givenB)]);
      const divergence = diffJournals(await runs.journalOf(a), await runs.journalOf(b));
      const [answerA, answerB] = await Promise.all([runs.run(a), runs.run(b)]);
      if (divergence) {
        process.stdout.write(report(`runs ${a} and ${b} first differ`, divergence));
        return EXIT.RUN_ERROR;
      }
      if (answerA?.answer !== answerB?.answer || answerA?.result_type !== answerB?.result_type) {
        process.stdout.write(
          report(`runs ${a} and ${b} first differ`, {
            at: "the end",
            what: "the answers differ",
            expected: answerA?.answer ?? answerA?.error,
            got: answerB?.answer ?? answerB?.error,
          }),
        );
        return EXIT.RUN_ERROR;
      }
      process.stdout.write(`same: runs ${a} and ${b} made the same calls and gave the same answer\n`);
      return EXIT.OK;
    } finally {
      await store.close();
    }
  } catch (err) {
    process.stderr.write(`runtime diff: ${describeError(err)}\n`);
    return EXIT.RUN_ERROR;
  }
}

function report(title: string, d: Divergence): string {
  const show = (v: unknown) => {
    const text = typeof v === "string" ? v : JSON.stringify(v);
    return text === undefined ? "(nothing)" : text.length > 300 ? `${text.slice(0, 300)}…` : text;
  };
  const lines = [`${title} at ${d.at}: ${d.what}`];
  if (d.expected !== undefined || d.got !== undefined) lines.push(`  run A / stored: ${show(d.expected)}`, `  run B / replay: ${show(d.got)}`);
  return `${lines.join("\n")}\n`;
}
