/**
 * Going on with a stored run (docs/durable-runs.md): `resumeRun` continues a
 * run that stopped before its end under the same task_id, reusing what its
 * journal holds; `replayRun` runs a stored run again offline, every reply and
 * tool result from its journal, into another trace directory, so its events
 * can be compared with the stored ones.
 */
import type { ResolvedTeam } from "../config/types.js";
import { RuntimeError } from "../errors.js";
import { EventBus } from "../events/bus.js";
import { ZERO_USAGE, type ApprovalDecision, type PendingApproval, type RunEvent, type Usage } from "../events/types.js";
import type { Store } from "../store/store.js";
import type { RunStore } from "../store/run-store.js";
import { TraceStore } from "../trace/store.js";
import { Replay, type RunRecord } from "./replay.js";
import { start, type RunOptions, type TeamRun } from "./run-team.js";
import { resolveTraceDir } from "./trace-dir.js";
import { acquireTraceStore, releaseTraceStore } from "./trace-stores.js";

export type ResumeOptions = Omit<RunOptions, "input" | "agent" | "sessionId" | "newId"> & {
  /** The run to continue. */
  taskId: string;
};

/** How a stored run was started, read from its journal without opening it for writing. */
export function storedRun(traceDir: string | undefined, taskId: string): RunRecord & { finished?: RunEvent } {
  const store = TraceStore.open(resolveTraceDir(traceDir), { create: false });
  try {
    const record = store.journalOf(taskId).find((e) => e.kind === "run");
    if (!record) throw new RuntimeError("NOT_FOUND", `no journal for run ${taskId} in ${store.file} (was it run with tracing on?)`);
    const last = store.eventsOfTask(taskId).findLast((e) => e.type === "run.finished");
    return { ...(JSON.parse(record.json) as RunRecord), ...(last ? { finished: last } : {}) };
  } finally {
    store.close();
  }
}

/**
 * Continue a stopped run (killed, interrupted, paused, out of budget) from
 * its journal: replies and tool results already there are reused, the run
 * goes on live from its first unfinished call, and its events go on after
 * the stored ones. A run that answered is not run again: its stored answer
 * comes back, and nothing is written.
 */
export function resumeRun(team: ResolvedTeam, options: ResumeOptions): TeamRun {
  const trace_dir = resolveTraceDir(options.traceDir);
  const record = storedRun(trace_dir, options.taskId);
  const finished = record.finished;
  if (finished?.type === "run.finished" && finished.result_type === "answer") return answered(options.taskId, finished.answer ?? "", finished.usage);
  const store = acquireTraceStore(trace_dir);
  let replay: Replay;
  let afterSeq: number;
  try {
    replay = new Replay("resume", store.journalOf(options.taskId), store.approvalsOf(options.taskId));
    afterSeq = store.lastSeq(options.taskId);
  } finally {
    releaseTraceStore(trace_dir);
  }
  return start(
    team,
    { ...options, traceDir: trace_dir, input: record.input, agent: record.agent, sessionId: record.session_id },
    { task_id: options.taskId, replay, afterSeq },
  );
}

/**
 * `resumeRun` for a run kept in a store given to the run (`RunOptions.store`,
 * docs/scale-out.md): what a worker does with a run another worker left
 * unfinished. Throws NOT_FOUND when the store holds no journal of the run.
 */
export async function resumeStoredRun(team: ResolvedTeam, options: ResumeOptions & { store: Store }): Promise<TeamRun> {
  const runs = options.store.runs;
  const taskId = options.taskId;
  const [journal, decisions, afterSeq, summary] = await Promise.all([runs.journalOf(taskId), runs.approvalsOf(taskId), runs.lastSeq(taskId), runs.run(taskId)]);
  const entry = journal.find((e) => e.kind === "run");
  if (!entry) throw new RuntimeError("NOT_FOUND", `no journal for run ${taskId} in ${runs.location}`);
  const record = JSON.parse(entry.json) as RunRecord;
  if (summary?.result_type === "answer") return answered(taskId, summary.answer ?? "", summary.usage ?? ZERO_USAGE);
  return start(
    team,
    { ...options, input: record.input, agent: record.agent, sessionId: record.session_id },
    { task_id: taskId, replay: new Replay("resume", journal, decisions), afterSeq },
  );
}

/** A run that answered already: its stored answer, nothing run or written. */
function answered(taskId: string, answer: string, usage: Usage): TeamRun {
  const bus = new EventBus(taskId);
  bus.close();
  return {
    task_id: taskId,
    events: { [Symbol.asyncIterator]: () => bus.events() },
    result: Promise.resolve({ task_id: taskId, result_type: "answer", answer, usage }),
  };
}

export type ReplayOptions = Omit<RunOptions, "input" | "agent" | "sessionId" | "approver" | "budget"> & {
  taskId: string;
  /** Where the stored run is. @default $RUNTIME_TRACE_DIR or ./.runtime */
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
export function replayRun(team: ResolvedTeam, options: ReplayOptions): TeamRun {
  const from = resolveTraceDir(options.from);
  if (resolveTraceDir(options.traceDir) === from) throw new RuntimeError("USAGE", "a replay writes its own trace: give it another trace directory");
  const record = storedRun(from, options.taskId);
  const store = TraceStore.open(from, { create: false });
  let replay: Replay;
  try {
    replay = new Replay("offline", store.journalOf(options.taskId), store.approvalsOf(options.taskId));
  } finally {
    store.close();
  }
  const noClient = (config: { model?: string; name: string }) => ({
    model: config.model ?? config.name,
    chat: () => Promise.reject(new RuntimeError("REPLAY_DIVERGED", "a replay asks no model: the journal has no reply for this call")),
  });
  return start(
    team,
    { ...options, input: record.input, agent: record.agent, sessionId: record.session_id, createClient: noClient },
    { task_id: options.taskId, replay, afterSeq: 0 },
  );
}

/** What a person decided on some of the calls a paused run waits for. */
export interface Decided {
  task_id: string;
  decided: PendingApproval[];
  /** Calls still waiting for a decision: the run pauses again on them. */
  waiting: PendingApproval[];
}

/**
 * Record a decision on the calls a paused run waits for: the one named by
 * `call` (its approval id or call id), or all of them. Throws NOT_FOUND when
 * the run waits for nothing or for no such call.
 */
export function decideApprovals(
  store: TraceStore,
  given: string,
  options: { call?: string; decision: ApprovalDecision; reason?: string; now?: Date },
): Decided {
  const task_id = store.resolveTaskId(given);
  const { pending, chosen } = chooseApprovals(task_id, store.eventsOfTask(task_id), options.call);
  const ts = (options.now ?? new Date()).toISOString();
  for (const a of chosen) store.decide(task_id, { key: a.approval_id, decision: options.decision, ...(options.reason ? { reason: options.reason } : {}), ts });
  const decisions = store.approvalsOf(task_id);
  return { task_id, decided: chosen, waiting: pending.filter((a) => !decisions.has(a.approval_id)) };
}

/** `decideApprovals` on any run store (a PostgreSQL one, say: docs/scale-out.md). */
export async function decideApprovalsIn(
  store: RunStore,
  given: string,
  options: { call?: string; decision: ApprovalDecision; reason?: string; now?: Date },
): Promise<Decided> {
  const task_id = await store.resolveTaskId(given);
  const { pending, chosen } = chooseApprovals(task_id, await store.eventsOfTask(task_id), options.call);
  const ts = (options.now ?? new Date()).toISOString();
  for (const a of chosen) await store.decide(task_id, { key: a.approval_id, decision: options.decision, ...(options.reason ? { reason: options.reason } : {}), ts });
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
    throw new RuntimeError("NOT_FOUND", `run ${task_id} waits for no call ${call} (it waits for: ${pending.map((a) => `${a.approval_id} ${a.tool}`).join(", ")})`);
  }
  return { pending, chosen };
}
