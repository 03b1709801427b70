import { randomUUID } from "node:crypto";
import type { ModelConfig, ResolvedTeam } from "../config/types.js";
import { describeError } from "../errors.js";
import { EventBus, type EventSink } from "../events/bus.js";
import { addUsage, ZERO_USAGE, type RunEvent, type Usage } from "../events/types.js";
import { createChatClient } from "../models/factory.js";
import type { ChatClient } from "../models/types.js";
import { runAgentStep, type RunShared } from "./agent-step.js";
import { Journal, type JournalSink } from "./journal.js";
import { teamSecrets } from "./secrets.js";
import { resolveTraceDir } from "./trace-dir.js";
import { acquireTraceStore, batchedTraceSink, releaseTraceStore } from "./trace-stores.js";
import { Account } from "./budget.js";

export { teamSecrets } from "./secrets.js";

export interface RunOptions {
  /** The user's request. */
  input: string;
  /** Agent to run. @default team.entry */
  agent?: string;
  /** Where traces (and plans, sessions) are stored. @default $RUNTIME_TRACE_DIR or ./.runtime */
  traceDir?: string;
  /** Store every event in the trace store. @default true */
  trace?: boolean;
  /** Cancels the run: it ends with result_type error, its trace kept. */
  signal?: AbortSignal;
  /** Conversation key: a follow-up with the same session continues its state. @default a new id */
  sessionId?: string;
  /** Called synchronously with every event, in order (progress views, NDJSON). */
  sinks?: EventSink[];
  /** Build the chat client of a model (wrap it to record, say). @default createChatClient */
  createClient?: (config: ModelConfig) => ChatClient;
  newId?: () => string;
  now?: () => Date;
}

export interface RunResult {
  task_id: string;
  result_type: "answer" | "error";
  answer?: string;
  error?: string;
  /** Set when the run was cancelled through `signal`. */
  interrupted?: boolean;
  usage: Usage;
}

export interface TeamRun {
  task_id: string;
  /** Every event of the run, from the first, as it happens. */
  events: AsyncIterable<RunEvent>;
  result: Promise<RunResult>;
}

/**
 * Run one agent of a loaded team on one input. Many runs may share a process;
 * a run holds no global state. The returned `result` never rejects: a failed
 * run resolves with result_type `error`.
 */
export function runTeam(team: ResolvedTeam, options: RunOptions): TeamRun {
  const newId = options.newId ?? randomUUID;
  const now = options.now ?? (() => new Date());
  const task_id = newId();
  const secrets = teamSecrets(team);
  // The one redaction stage: every sink, the event stream and so SSE get masked events.
  const bus = new EventBus(task_id, now, { secrets });
  const agentName = options.agent ?? team.entry;
  const trace_dir = resolveTraceDir(options.traceDir);

  let usage: Usage = ZERO_USAGE;
  bus.tap((e) => {
    if (e.type === "llm.response") usage = addUsage(usage, e.usage);
  });
  let traceError: string | undefined;
  let storeHeld = false;
  let flushTrace = () => {};
  let journalSink: JournalSink | undefined;
  if (options.trace !== false) {
    try {
      const store = acquireTraceStore(trace_dir);
      storeHeld = true;
      const trace = batchedTraceSink(store);
      bus.subscribe(trace.sink);
      flushTrace = trace.commit;
      journalSink = { write: trace.journal, commit: trace.commit };
    } catch (err) {
      traceError = `cannot open the trace store in ${trace_dir}: ${describeError(err)}`;
    }
  }
  for (const sink of options.sinks ?? []) bus.subscribe(sink);

  const clients = new Map<string, ChatClient>();
  const makeClient = options.createClient ?? createChatClient;
  const shared: RunShared = {
    team,
    bus,
    journal: new Journal(task_id, journalSink, secrets, now),
    task_id,
    session_id: options.sessionId ?? newId(),
    trace_dir,
    client(config) {
      let client = clients.get(config.name);
      if (!client) {
        client = makeClient(config);
        clients.set(config.name, client);
      }
      return client;
    },
    toolCache: new Map(),
    unavailableModels: new Set(),
    accounts: team.budget ? [new Account("the team", team.budget)] : [],
    inflight: new Set(),
    newId,
    now,
  };

  const result = (async (): Promise<RunResult> => {
    const scope = { agent_id: agentName };
    bus.emit({ type: "run.started", input: options.input }, scope);
    const signal = options.signal ?? new AbortController().signal;
    let outcome: RunResult;
    if (traceError) {
      outcome = { task_id, result_type: "error", error: traceError, usage };
    } else if (!team.agents[agentName]) {
      outcome = { task_id, result_type: "error", error: `unknown agent '${agentName}'`, usage };
    } else {
      const step = await runAgentStep(shared, agentName, options.input, signal);
      while (shared.inflight.size > 0) await Promise.allSettled([...shared.inflight]);
      outcome = { task_id, ...step, usage };
      // The team's budget stopped a call somewhere: the run ends with that error, even if a caller recovered.
      const spent = shared.accounts[0]?.exhausted;
      if (spent !== undefined) outcome = { task_id, result_type: "error", error: spent, usage };
      if (signal.aborted) outcome = { task_id, result_type: "error", error: "interrupted", interrupted: true, usage };
    }
    const { task_id: _id, interrupted: _i, ...finished } = outcome;
    // The result is read back from the masked event, so an answer or error never carries a secret either.
    const event = bus.mask(bus.emit({ type: "run.finished", ...finished, usage }, scope));
    bus.close();
    const masked = event.type === "run.finished" ? event : { ...finished, usage };
    return {
      task_id,
      result_type: masked.result_type,
      ...(masked.answer !== undefined ? { answer: masked.answer } : {}),
      ...(masked.error !== undefined ? { error: masked.error } : {}),
      ...(outcome.interrupted ? { interrupted: true } : {}),
      usage,
    };
  })().finally(() => {
    flushTrace();
    if (storeHeld) releaseTraceStore(trace_dir);
  });

  return { task_id, events: { [Symbol.asyncIterator]: () => bus.events() }, result };
}
