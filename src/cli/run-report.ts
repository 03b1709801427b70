/**
 * What `exec` and `resume` share: the run's sinks (NDJSON, the progress
 * display), Ctrl-C, asking a person in a terminal about calls that need
 * approval, and the answer or the reason on the way out with its exit status
 * (0 answered, 1 error, 3 paused, 130 interrupted).
 */
import { createInterface } from "node:readline/promises";
import type { ResolvedTeam } from "../config/types.js";
import type { EventSink } from "../events/bus.js";
import type { LiveSinkOptions } from "../events/live/sink.js";
import type { AnswerFeed } from "./answer-feed.js";
import type { Approver } from "../engine/approvals.js";
import type { RunOptions, RunResult, TeamRun } from "../engine/run-team.js";
import type { Store } from "../store/store.js";
import { describeError } from "../errors.js";
import { EXIT, exitStatusOf } from "./exit.js";
import { startTelemetryIfAsked } from "./telemetry.js";

export interface ReportOptions {
  events?: string;
  progress?: boolean;
  /** In a terminal, the detailed log (every state, thought and tool call) instead of the live view. */
  verbose?: boolean;
  traceDir?: string;
  /** Export OpenTelemetry spans even without OTEL_EXPORTER_OTLP_ENDPOINT (docs/telemetry.md). */
  otel?: boolean;
  /** Where the run is kept (`--store`); else the embedded store of the trace directory. */
  store?: Store;
}

/** What every run the CLI starts is given. */
export type BaseOptions = Pick<RunOptions, "traceDir" | "store" | "signal" | "sinks" | "approver">;

export async function runAndReport(
  command: string,
  opts: ReportOptions,
  team: ResolvedTeam,
  begin: (base: BaseOptions) => TeamRun | Promise<TeamRun>,
): Promise<number> {
  const [{ ndjsonSink }, { resolveTraceDir }, { createStore }] = await Promise.all([
    import("../events/ndjson-sink.js"),
    import("../engine/trace-dir.js"),
    import("../store/create.js"),
  ]);
  // A trace directory that cannot hold the store is a usage mistake: say so before anything runs.
  // The run is given the store (the `--store` one, else the trace directory's). A run given a store writes nothing in the directory.
  const traceDir = resolveTraceDir(opts.traceDir);
  let store: Store;
  try {
    store = opts.store ?? (await createStore(traceDir));
  } catch (err) {
    process.stderr.write(`runtime ${command}: ${describeError(err)}\n`);
    return EXIT.USAGE;
  }
  const embedded = store === opts.store ? undefined : store;

  let telemetry: Awaited<ReturnType<typeof startTelemetryIfAsked>>;
  try {
    telemetry = await startTelemetryIfAsked(opts.otel, command);
  } catch (err) {
    await embedded?.close();
    process.stderr.write(`runtime ${command}: ${describeError(err)}\n`);
    return EXIT.USAGE;
  }

  const sinks: EventSink[] = [];
  if (telemetry) sinks.push(telemetry.sink({ team }));
  const ndjson = opts.events === "ndjson";
  if (ndjson) sinks.push(ndjsonSink((line) => process.stdout.write(line)));
  const progress = await progressSink(opts, team);
  let answering: AnswerFeed | undefined;
  if (progress) {
    // The answer as it is written, in the display too (docs/cli.md#watching-a-run); stdout still gets it once, whole.
    answering = (await import("./answer-feed.js")).answerFeed(team, progress.answer);
    sinks.push(progress, answering);
  }
  // What the runtime adapted to (a chat template's rules, a fallback model) is said once on stderr,
  // whatever else is shown (docs/model-servers.md); the progress display says it itself.
  else sinks.push((e) => e.type === "llm.notice" && process.stderr.write(`runtime ${command}: warning: ${e.message}\n`));

  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts += 1;
    if (interrupts > 1) process.exit(EXIT.INTERRUPTED);
    controller.abort();
  };
  process.on("SIGINT", onSigint);
  process.on("SIGTERM", onSigint);

  let result: RunResult | undefined;
  try {
    const run = await begin({
      traceDir,
      store,
      signal: controller.signal,
      sinks,
      // In a terminal a person is there to ask; elsewhere the run pauses (exit 3).
      ...(process.stdin.isTTY && process.stderr.isTTY ? { approver: terminalApprover() } : {}),
    });
    result = await run.result;
  } catch (err) {
    process.stderr.write(`runtime ${command}: ${describeError(err)}\n`);
    await telemetry?.shutdown();
    return EXIT.RUN_ERROR;
  } finally {
    await embedded?.close();
    process.off("SIGINT", onSigint);
    process.off("SIGTERM", onSigint);
    await answering?.settled();
    progress?.close({ interrupted: result?.error?.code === "ABORTED" });
  }

  const status = report(command, opts, result, ndjson);
  // The answer is out; the spans are sent before the process ends, within the export timeout (a dead collector: one warning).
  await telemetry?.shutdown();
  return status;
}

/**
 * What shows the run on stderr: in a terminal the live view redrawn in place
 * (src/events/live/), or with --verbose (or --events ndjson) the detailed log; elsewhere, with
 * --progress, the log as plain lines. Each is loaded only when chosen: the
 * live view's terminal packages are never read by a run that does not draw it.
 */
async function progressSink(
  opts: ReportOptions,
  team: ResolvedTeam,
): Promise<(EventSink & { answer(text: string): void; close(how?: { interrupted?: boolean }): void }) | undefined> {
  const tty = process.stderr.isTTY === true;
  if (!(opts.progress ?? tty)) return undefined;
  // With --events ndjson the events stream while the run goes (to the same terminal, perhaps): the log as before.
  if (tty && !opts.verbose && opts.events !== "ndjson") {
    const { liveSink } = await import("../events/live/sink.js");
    return liveSink(process.stderr, { color: colorWanted(), ...viewConfig(team) });
  }
  const { terminalSink } = await import("../events/terminal-sink.js");
  return terminalSink(process.stderr, { color: tty });
}

/** Colours in a terminal unless NO_COLOR is set (no-color.org). */
function colorWanted(): boolean {
  return !process.env.NO_COLOR;
}

/** The team's budget, and the price of the model behind each call for the cost (docs/budgets.md). */
function viewConfig(team: ResolvedTeam): Pick<LiveSinkOptions, "budget" | "priceOf"> {
  return {
    ...(team.budget ? { budget: team.budget } : {}),
    priceOf: (agent, modelName) => {
      const model = team.models[modelName ?? team.agents[agent]?.model ?? ""];
      return model !== undefined && model.provider !== "scripted" ? model.price : undefined;
    },
  };
}

/** The answer on stdout, or what happened on stderr; the exit status. */
function report(command: string, opts: ReportOptions, result: RunResult, ndjson: boolean): number {
  const dir = opts.traceDir !== undefined ? ` --trace-dir ${opts.traceDir}` : "";
  if (result.error?.code === "ABORTED") {
    process.stderr.write(`runtime ${command}: interrupted; trace kept (runtime trace ${result.task_id}; runtime resume ${result.task_id}${dir} to go on)\n`);
    return exitStatusOf(result.error.code);
  }
  if (result.result_type === "answer") {
    if (!ndjson) process.stdout.write(`${result.answer ?? ""}\n`);
    // An unverified answer is still the answer; `verify: strict` makes it a failed run (docs/design/verification.md).
    if (result.verification?.status === "failed") {
      process.stderr.write(`runtime ${command}: the answer is unverified:\n${result.verification.findings.map((f) => `- ${f}`).join("\n")}\n`);
      if (result.verification.strict) return EXIT.RUN_ERROR;
    }
    return EXIT.OK;
  }
  if (result.result_type === "paused") {
    const calls = (result.approvals ?? []).map(
      (a) => `${a.tool} (call ${a.call_id}, approval ${a.approval_id}${a.in_doubt ? ", in doubt: it may have run before the run stopped" : ""})`,
    );
    process.stderr.write(
      `runtime ${command}: paused: waiting for approval of ${calls.join("; ")}\n` +
        `  approve: runtime approve ${result.task_id}${dir}   (or --deny --reason TEXT)\n` +
        `  then:    runtime resume ${result.task_id}${dir}\n`,
    );
    return EXIT.PAUSED;
  }
  if (result.result_type === "blocked") {
    process.stderr.write(`runtime ${command}: ${result.error?.message ?? "blocked by a guardrail"} (runtime trace ${result.task_id})\n`);
    return EXIT.BLOCKED;
  }
  // One line, whatever an engine put into its error.
  const error = (result.error?.message ?? "unknown error").replace(/\s*\n\s*/g, " ");
  process.stderr.write(`runtime ${command}: run failed: ${error} (runtime trace ${result.task_id}; runtime resume ${result.task_id}${dir} to try again)\n`);
  return exitStatusOf(result.error?.code ?? "INTERNAL");
}

/** Asks on the terminal, one call at a time. */
function terminalApprover(): Approver {
  let queue = Promise.resolve();
  return (request) => {
    const asked = queue.then(async () => {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        const args = JSON.stringify(request.arguments);
        const doubt = request.in_doubt ? " It started before the run stopped and may have run already." : "";
        const answer = await rl.question(`\nApprove ${request.tool} ${args.length > 400 ? `${args.slice(0, 400)}…` : args}?${doubt} [y/N] `);
        if (/^y(es)?$/i.test(answer.trim())) return { decision: "approve" as const };
        const reason = (await rl.question("Reason (optional, told to the model): ")).trim();
        return { decision: "deny" as const, ...(reason ? { reason } : {}) };
      } finally {
        rl.close();
      }
    });
    queue = asked.then(
      () => undefined,
      () => undefined,
    );
    return asked;
  };
}
