import type { Command } from "commander";
import { RuntimeError, codeOf, describeError } from "../../errors.js";
import type { RunEvent } from "../../events/types.js";
import type { RunSummary } from "../../store/runs.js";
import { exitStatusOf, type SetExit } from "../exit.js";
import { STORE_OPTION_HELP, storeUrl } from "../store-option.js";
import type { RunStore } from "../../store/runs.js";

interface TraceOptions {
  agent?: string;
  session?: string;
  traceId?: string;
  json?: boolean;
  traceDir?: string;
  store?: string;
  html?: string;
  status?: string;
  limit: string;
}

/** `runtime trace [TASK_ID] [--agent NAME] [--trace-id ID] [--json] [--trace-dir DIR]`. */
export function registerTrace(program: Command, setExit: SetExit): void {
  program
    .command("trace")
    .description("print a stored run as a tree, an agent's runs, one recursion's events, or the recent runs")
    .argument("[task_id]", "the run to print (a unique beginning or end of its id is enough)")
    .option("--agent <name>", "list the runs in which this agent ran, as the entry agent or called at any depth")
    .option("--session <id>", "list the runs of one conversation (exec --session, session_id of the server), newest first")
    .option("--status <status>", "list the runs with this status: answer, error, paused or running (not finished)")
    .option("--trace-id <id>", "print the events of one recursion")
    .option("--json", "print raw events (or runs) as JSON lines")
    .option("--html <file>", "write the run (TASK_ID) as one self-contained HTML file (- for stdout): its tree and timeline, to open offline or share")
    .option("--trace-dir <dir>", "where traces are stored (default: $RUNTIME_TRACE_DIR or .runtime)")
    .option("--store <url>", STORE_OPTION_HELP)
    .option("--limit <n>", "how many runs to list", "20")
    .action(async (taskId: string | undefined, options: TraceOptions) => {
      try {
        const out = await traceCommand(taskId, options);
        process.stdout.write(out);
      } catch (err) {
        process.stderr.write(`runtime trace: ${describeError(err)}\n`);
        setExit(exitStatusOf(codeOf(err)));
      }
    });
}

/** What `runtime trace` prints; throws RuntimeError NOT_FOUND (exit 1) or USAGE (exit 2). */
async function traceCommand(taskId: string | undefined, options: TraceOptions): Promise<string> {
  const listing = options.agent !== undefined || options.session !== undefined || options.status !== undefined;
  const chosen = [taskId !== undefined, listing, options.traceId !== undefined].filter(Boolean);
  if (chosen.length > 1) throw new RuntimeError("USAGE", "give one of TASK_ID, --agent NAME / --session ID / --status S, or --trace-id ID");
  const { RUN_STATUSES } = await import("../../store/runs.js");
  const status = RUN_STATUSES.find((s) => s === options.status);
  if (options.status !== undefined && status === undefined)
    throw new RuntimeError("USAGE", `--status must be one of ${RUN_STATUSES.join(", ")}, got "${options.status}"`);
  if (options.html !== undefined && taskId === undefined) throw new RuntimeError("USAGE", "--html writes one run: give its TASK_ID");
  if (options.html !== undefined && options.json) throw new RuntimeError("USAGE", "give one of --html FILE and --json");
  const limit = Number(options.limit);
  if (!Number.isInteger(limit) || limit < 1) throw new RuntimeError("USAGE", `--limit must be a positive integer, got "${options.limit}"`);

  const url = storeUrl(options.store);
  // The store (better-sqlite3 or pg) and the views load only when the command runs, so `runtime --help` starts fast.
  const { formatRunList, renderRunTree, renderTraceEvents } = await import("../../trace/tree.js");
  const { store, close, dir } = await openForReading(url, options.traceDir);
  const color = process.stdout.isTTY === true && process.env["NO_COLOR"] === undefined;
  try {
    if (options.traceId !== undefined) {
      const events = await store.eventsOfTrace(options.traceId);
      if (events.length === 0) throw new RuntimeError("NOT_FOUND", `no events with trace_id ${options.traceId} in ${dir}`);
      return options.json ? jsonLines(events) : renderTraceEvents(events, { color });
    }
    if (taskId !== undefined) {
      const events = await store.eventsOfTask(await store.resolveTaskId(taskId));
      if (options.html !== undefined) return await writeHtml(options.html, events);
      return options.json ? jsonLines(events) : renderRunTree(events, { color });
    }
    const runs: RunSummary[] = await store.listRuns({
      limit,
      ...(options.agent !== undefined ? { agent: options.agent } : {}),
      ...(options.session !== undefined ? { session: options.session } : {}),
      ...(status !== undefined ? { status } : {}),
    });
    if (runs.length === 0) {
      const of = [
        options.agent !== undefined ? `of agent ${options.agent}` : "",
        options.session !== undefined ? `in session ${options.session}` : "",
        status !== undefined ? `with status ${status}` : "",
      ]
        .filter(Boolean)
        .join(" ");
      throw new RuntimeError("NOT_FOUND", `no runs ${of ? `${of} ` : ""}in ${dir}`);
    }
    return options.json ? jsonLines(runs) : formatRunList(runs, { color });
  } finally {
    await close();
  }
}

/** The store to read: PostgreSQL at `url`, else the trace directory's SQLite file (which must exist). */
async function openForReading(url: string | undefined, traceDir: string | undefined): Promise<{ store: RunStore; close(): Promise<void>; dir: string }> {
  try {
    const { readStore } = await import("../../engine/resume.js");
    const store = await readStore(url ?? traceDir);
    return { store: store.runs, close: () => store.close(), dir: store.location };
  } catch (err) {
    // A store that cannot be read is "nothing found here", exit 1; a newer schema says so itself.
    if (err instanceof RuntimeError) throw new RuntimeError("NOT_FOUND", err.message, { cause: err });
    throw err;
  }
}

/** The run as one HTML file (docs/server.md#run-history); `-` writes it to stdout. */
async function writeHtml(file: string, events: RunEvent[]): Promise<string> {
  const [{ writeFile }, { traceHtml }] = await Promise.all([import("node:fs/promises"), import("../../server/trace-html.js")]);
  const html = traceHtml(events);
  if (file === "-") return html;
  try {
    await writeFile(file, html);
  } catch (err) {
    throw new RuntimeError("USAGE", `cannot write ${file}: ${describeError(err)}`, { cause: err });
  }
  return `wrote ${file}: the run ${events[0]?.task_id ?? ""} (${events.length} events) as one HTML file\n`;
}

function jsonLines(items: readonly (RunEvent | RunSummary)[]): string {
  return items.map((item) => `${JSON.stringify(item)}\n`).join("");
}
