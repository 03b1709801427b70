import { randomUUID } from "node:crypto";
import type { ModelConfig, ResolvedTeam } from "../config/types.js";
import { describeError } from "../errors.js";
import { EventBus, type EventSink } from "../events/bus.js";
import { addUsage, ZERO_USAGE, type RunEvent, type Usage } from "../events/types.js";
import { createChatClient } from "../models/factory.js";
import type { ChatClient } from "../models/types.js";
import { runAgentStep, type RunShared } from "./agent-step.js";
import { isSecretKey } from "../trace/redact.js";
import { resolveTraceDir } from "./trace-dir.js";
import { acquireTraceStore, batchedTraceSink, releaseTraceStore } from "./trace-stores.js";

/**
 * The team's own secrets, masked by value wherever they might appear: model
 * API keys, and the values of secret-named command env variables and http
 * headers (`SERVICE_TOKEN`, `X-Api-Key`, `Authorization`), which a tool's
 * output or error could otherwise echo into events and the trace.
 */
export function teamSecrets(team: ResolvedTeam): string[] {
  const keys = Object.values(team.models).flatMap((m) => (m.provider === "openai" && m.api_key ? [m.api_key] : []));
  const named = Object.values(team.tools).flatMap((t) => {
    const values = t.type === "command" ? t.env : t.type === "http" ? t.headers : {};
    return Object.entries(values).flatMap(([name, value]) => (isSecretKey(name) && value ? [value] : []));
  });
  return [...new Set([...keys, ...named])];
}

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
  const bus = new EventBus(task_id, now);
  const agentName = options.agent ?? team.entry;
  const trace_dir = resolveTraceDir(options.traceDir);

  let usage: Usage = ZERO_USAGE;
  bus.subscribe((e) => {
    if (e.type === "llm.response") usage = addUsage(usage, e.usage);
  });
  let traceError: string | undefined;
  let storeHeld = false;
  let flushTrace = () => {};
  if (options.trace !== false) {
    try {
      const store = acquireTraceStore(trace_dir);
      storeHeld = true;
      // The store is shared by every team of the process; this team's keys are masked as it writes.
      const trace = batchedTraceSink(store, teamSecrets(team));
      bus.subscribe(trace.sink);
      flushTrace = trace.flush;
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
      if (signal.aborted) outcome = { task_id, result_type: "error", error: "interrupted", interrupted: true, usage };
    }
    const { task_id: _id, interrupted: _i, ...finished } = outcome;
    bus.emit({ type: "run.finished", ...finished, usage }, scope);
    bus.close();
    return { ...outcome, usage };
  })().finally(() => {
    flushTrace();
    if (storeHeld) releaseTraceStore(trace_dir);
  });

  return { task_id, events: { [Symbol.asyncIterator]: () => bus.events() }, result };
}
