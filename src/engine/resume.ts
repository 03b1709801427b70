/**
 * Going on with a stored run (docs/durable-runs.md): `resumeRun` continues a
 * run that stopped before its end under the same task_id, reusing what its
 * journal holds; `replayRun` runs a stored run again offline, every reply and
 * tool result from its journal, into another trace directory, so its events
 * can be compared with the stored ones.
 */
import type { ResolvedTeam } from "../config/types.js";
import { RuntimeError } from "../errors.js";
import { ZERO_USAGE, type ApprovalDecision, type PendingApproval, type RunEvent, type Usage } from "../events/types.js";
import type { JournalEntry, RunStore } from "../store/runs.js";
import { createStore, isPostgresUrl } from "../store/create.js";
import type { Store } from "../store/store.js";
import { Replay, type RunRecord } from "./replay.js";
import { start, type Continued, type RunOptions, type TeamRun } from "./run-team.js";
import { runEvents } from "./run-events.js";
import { resolveTraceDir } from "./trace-dir.js";
import { loadAttachments } from "./attachments.js";

export type ResumeOptions = Omit<RunOptions, "input" | "agent" | "sessionId" | "history" | "attachments" | "newId"> & {
  /** The run to continue. */
  taskId: string;
};

/**
 * The store of a trace directory (or a `postgres://` URL), for reading a
 * stored run: never created (a wrong directory is reported, NOT_FOUND).
 */
export function readStore(location: string | undefined): Promise<Store> {
  return createStore(isPostgresUrl(location) ? location : resolveTraceDir(location), { create: false });
}

/** How a stored run was started, from its journal. Throws NOT_FOUND when the store holds no journal of it. */
export async function storedRun(runs: RunStore, taskId: string): Promise<RunRecord> {
  return runRecord(await runs.journalOf(taskId), taskId, runs.location);
}

function runRecord(journal: readonly JournalEntry[], taskId: string, location: string): RunRecord {
  const entry = journal.find((e) => e.kind === "run");
  if (!entry) throw new RuntimeError("NOT_FOUND", `no journal for run ${taskId} in ${location} (was it run with tracing on?)`);
  return JSON.parse(entry.json) as RunRecord;
}

/**
 * Continue a stopped run (killed, interrupted, paused, out of budget) from
 * its journal, in the run's store (`options.store`, else the embedded one
 * of its trace directory): replies and tool results already there are
 * reused, the run goes on live from its first unfinished call, and its
 * events go on after the stored ones. A run that answered is not run again:
 * its stored answer comes back, and nothing is written. Throws NOT_FOUND
 * when the store holds no journal of the run (a worker's run taken before
 * it wrote anything, say).
 */
export async function resumeRun(team: ResolvedTeam, options: ResumeOptions): Promise<TeamRun> {
  const traceDir = resolveTraceDir(options.traceDir);
  const stored = options.store ?? (await readStore(traceDir));
  const runs = stored.runs;
  const taskId = options.taskId;
  try {
    const [journal, decisions, afterSeq, summary] = await Promise.all([
      runs.journalOf(taskId),
      runs.approvalsOf(taskId),
      runs.lastSeq(taskId),
      runs.run(taskId),
    ]);
    const record = runRecord(journal, taskId, runs.location);
    if (summary?.result_type === "answer") return answered(taskId, summary.answer ?? "", summary.usage ?? ZERO_USAGE);
    return start(
      team,
      {
        ...options,
        traceDir,
        input: record.input,
        agent: record.agent,
        sessionId: record.session_id,
        // Its caller's sessions, as when it began (src/store/caller-sessions.ts).
        ...(summary?.caller !== undefined ? { caller: summary.caller } : {}),
        ...historyOf(record),
      },
      // Its attachments are in the store it goes on in.
      { task_id: taskId, replay: new Replay("resume", journal, decisions), afterSeq, ...attachmentsOf(record, undefined, taskId) },
    );
  } finally {
    if (stored !== options.store) await stored.close();
  }
}

function historyOf(record: RunRecord): Pick<RunOptions, "history"> {
  return record.history ? { history: record.history } : {};
}

/**
 * The run's attachments, the same bytes read back by hash from the store it
 * was started in (docs/attachments.md): `from`, else the store the run goes on in.
 */
function attachmentsOf(record: RunRecord, from: Store | undefined, taskId: string): Pick<Continued, "attachments"> {
  const refs = record.attachments;
  return refs?.length ? { attachments: (own) => loadAttachments(() => (from ?? own).attachments(), refs, taskId) } : {};
}

/** A run that answered already: its stored answer, nothing run or written. */
function answered(taskId: string, answer: string, usage: Usage): TeamRun {
  return {
    task_id: taskId,
    events: runEvents(undefined, taskId, 0, Promise.resolve()),
    result: Promise.resolve({ task_id: taskId, result_type: "answer", answer, usage }),
  };
}

export type ReplayOptions = Omit<RunOptions, "input" | "agent" | "sessionId" | "history" | "attachments" | "approver" | "budget"> & {
  taskId: string;
  /** Where the stored run is: a trace directory or a `postgres://` URL. @default $RUNTIME_TRACE_DIR or ./.runtime */
  from?: string;
  /** Where the replay's own trace goes (a scratch directory): never the stored run's. */
  traceDir: string;
};

/**
 * Run a stored run again offline: every model reply and tool result comes
 * from its journal (nothing is asked of a model, no tool with effects runs),
 * decisions on approvals as recorded. A call the journal does not hold, or
 * a request that differs from the recorded one, ends the replay with
 * REPLAY_DIVERGED naming the call.
 */
export async function replayRun(team: ResolvedTeam, options: ReplayOptions): Promise<TeamRun> {
  const from = resolveTraceDir(options.from);
  if (resolveTraceDir(options.traceDir) === from) throw new RuntimeError("USAGE", "a replay writes its own trace: give it another trace directory");
  const source = await readStore(from);
  let replay: Replay;
  let record: RunRecord;
  try {
    const [journal, decisions] = await Promise.all([source.runs.journalOf(options.taskId), source.runs.approvalsOf(options.taskId)]);
    record = runRecord(journal, options.taskId, source.location);
    replay = new Replay("offline", journal, decisions);
  } catch (err) {
    await source.close();
    throw err;
  }
  const noClient = (config: { model?: string; name: string }) => ({
    model: config.model ?? config.name,
    chat: () => Promise.reject(new RuntimeError("REPLAY_DIVERGED", "a replay asks no model: the journal has no reply for this call")),
  });
  const run = start(
    team,
    { ...options, input: record.input, agent: record.agent, sessionId: record.session_id, ...historyOf(record), createClient: noClient },
    { task_id: options.taskId, replay, afterSeq: 0, ...attachmentsOf(record, source, options.taskId) },
  );
  // The source store is read until the replay ends (its attachments).
  void run.result.then(() => source.close());
  return run;
}

/** What a person decided on some of the calls a paused run waits for. */
export interface Decided {
  task_id: string;
  decided: PendingApproval[];
  /** Calls still waiting for a decision: the run pauses again on them. */
  waiting: PendingApproval[];
}

/**
 * Record a decision on the calls a paused run waits for, in any run store:
 * the one named by `call` (its approval id or call id), or all of them.
 * Throws NOT_FOUND when the run waits for nothing or for no such call.
 */
export async function decideApprovals(
  store: RunStore,
  given: string,
  options: { call?: string; decision: ApprovalDecision; reason?: string; now?: Date },
): Promise<Decided> {
  const task_id = await store.resolveTaskId(given);
  const { pending, chosen } = chooseApprovals(task_id, await store.eventsOfTask(task_id), options.call);
  const ts = (options.now ?? new Date()).toISOString();
  for (const a of chosen)
    await store.decide(task_id, { key: a.approval_id, decision: options.decision, ...(options.reason ? { reason: options.reason } : {}), ts });
  const decisions = await store.approvalsOf(task_id);
  return { task_id, decided: chosen, waiting: pending.filter((a) => !decisions.has(a.approval_id)) };
}

/** The calls a paused run waits for, and those of them `call` names (all when undefined). Throws NOT_FOUND. */
function chooseApprovals(task_id: string, events: readonly RunEvent[], call: string | undefined): { pending: PendingApproval[]; chosen: PendingApproval[] } {
  const last = events.findLast((e) => e.type === "run.finished");
  const pending = last?.type === "run.finished" && last.result_type === "paused" ? (last.approvals ?? []) : [];
  if (pending.length === 0) throw new RuntimeError("NOT_FOUND", `run ${task_id} is not waiting for any approval`);
  const chosen = call === undefined ? pending : pending.filter((a) => a.approval_id === call || a.call_id === call);
  if (chosen.length === 0) {
    throw new RuntimeError(
      "NOT_FOUND",
      `run ${task_id} waits for no call ${call} (it waits for: ${pending.map((a) => `${a.approval_id} ${a.tool}`).join(", ")})`,
    );
  }
  return { pending, chosen };
}
