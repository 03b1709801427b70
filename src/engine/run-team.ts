import { newId as newTimeOrderedId } from "../ids.js";
import type { Budget, ModelConfig, ResolvedTeam } from "../config/types.js";
import { INTERRUPTED, RuntimeError, describeError, type RunError } from "../errors.js";
import { redactString } from "../redact.js";
import { EventBus, type EventSink, type ReadBack } from "../events/bus.js";
import { addUsage } from "../events/usage.js";
import { ZERO_USAGE, type PendingApproval, type RunEvent, type Usage, type Verification } from "../events/types.js";
import { createChatClient } from "../models/factory.js";
import { McpServers } from "../tools/mcp/servers.js";
import type { ChatClient } from "../models/types.js";
import type { Tool } from "../tools/types.js";
import type { Blocked } from "../guardrails/guard.js";
import { runAgentStep, type RunShared } from "./agent-step.js";
import { Journal } from "./journal.js";
import { providedTools } from "./resolve-tools.js";
import { teamSecrets } from "./secrets.js";
import { resolveTraceDir } from "./trace-dir.js";
import { Account } from "./budget.js";
import { Approvals, type Approver, type Decision } from "./approvals.js";
import type { Replay } from "./replay.js";
import type { Store } from "../store/store.js";
import type { RunWriter } from "../store/runs.js";
import type { Exchange } from "../store/conversations.js";
import type { Attachment } from "../models/attachment.js";
import { checkAttachments, storeAttachments } from "./attachments.js";

export { teamSecrets } from "./secrets.js";

export interface RunOptions {
  /** The user's request. */
  input: string;
  /** Agent to run. @default team.entry */
  agent?: string;
  /** Where traces (and plans, sessions) are stored. @default $RUNTIME_TRACE_DIR or ./.runtime */
  traceDir?: string;
  /**
   * Where the run is kept: its events, journal, plans and todo sessions
   * (`createStore`, docs/scale-out.md). @default the SQLite files under traceDir
   */
  store?: Store;
  /** The run's id, when the caller chose it (a queued run's). @default a new id */
  taskId?: string;
  /** Store every event in the trace store. @default true */
  trace?: boolean;
  /**
   * Keep the run's journal beside its trace (docs/durable-runs.md): what
   * resume and replay read. Off, the run's events are still stored but it
   * cannot be resumed or replayed. @default true (false when trace is off)
   */
  journal?: boolean;
  /** Cancels the run: it ends with result_type error, its trace kept. */
  signal?: AbortSignal;
  /** Conversation key: a follow-up with the same session continues its state. @default a new id */
  sessionId?: string;
  /**
   * Who started the run: the name of the server's caller (docs/security.md#who-can-reach-what),
   * recorded in `run.started` and so with the run as its owner. Never a token.
   */
  caller?: string;
  /**
   * The conversation before `input`, as the caller keeps it (an OpenAI
   * client's earlier messages, docs/protocols.md): the agent sees it as a
   * session's history (docs/sessions.md), instead of the session's stored turns.
   */
  history?: readonly Exchange[];
  /**
   * Files for the run (`makeAttachment`, docs/attachments.md): the entry
   * agent's first request carries them. Checked before any request (caps,
   * kind, models), kept in the run's store by hash. @default none
   */
  attachments?: readonly Attachment[];
  /** Called synchronously with every event, in order (progress views, NDJSON). */
  sinks?: EventSink[];
  /**
   * Tools written in code (`defineTool()`), usable by agents that list their
   * names in `tools`; load the team with the same `tools` so that it may list
   * them (docs/code-tools.md). @default none
   */
  tools?: readonly Tool[];
  /** Build the chat client of a model (wrap it to record, say). @default createChatClient */
  createClient?: (config: ModelConfig) => ChatClient;
  /**
   * Asks a person about a tool call that needs approval, and the run waits
   * for the answer. Without one, such a call pauses the run: it ends
   * `paused`, and `resumeRun` continues it once a decision is recorded.
   */
  approver?: Approver;
  /** Limits replacing those of the team's `budget` for this run (a resume with a larger budget). */
  budget?: Budget;
  newId?: () => string;
  now?: () => Date;
}

export interface RunResult {
  task_id: string;
  /** `paused`: the run waits for the approvals listed (docs/durable-runs.md); `blocked`: a guardrail ended it (docs/guardrails.md). */
  result_type: "answer" | "error" | "paused" | "blocked";
  answer?: string;
  /** Why the run failed (or was blocked): a code of the closed union (src/errors.ts) and a message. */
  error?: RunError;
  approvals?: PendingApproval[];
  /** The guardrail that blocked the run. */
  guardrail?: Blocked;
  /** Set when the run was cancelled through `signal`. */
  interrupted?: boolean;
  /** How the answer was verified (docs/design/verification.md). */
  verification?: Verification;
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
  return start(team, options);
}

/** What a run goes on from: its stored journal (resume, replay; src/engine/resume.ts). */
export interface Continued {
  task_id: string;
  replay: Replay;
  /** The last seq stored (resume); 0 for a replay into a new store. */
  afterSeq: number;
  /** Where decisions given during the run are recorded. */
  decide?: (key: string, decision: Decision) => void;
  /** The stored run's attachments, read back from its store (src/engine/attachments.ts). */
  attachments?: () => Promise<Attachment[]>;
}

/** Add an answered run to its session's conversation; a store that fails is a warning, not a failed run. */
async function recordTurn(shared: RunShared, input: string, answer: string, now: () => Date): Promise<void> {
  try {
    const conversations = shared.stores.conversations();
    try {
      await conversations.append(shared.session_id, { task_id: shared.task_id, input, answer, ts: now().toISOString() });
    } finally {
      await conversations.close();
    }
  } catch (err) {
    process.emitWarning(`cannot add run ${shared.task_id} to session ${shared.session_id}: ${describeError(err)}`, "SessionWarning");
  }
}

/** Start a run, or go on with a stored one. */
export function start(team: ResolvedTeam, options: RunOptions, continued?: Continued): TeamRun {
  const newId = options.newId ?? newTimeOrderedId;
  const now = options.now ?? (() => new Date());
  const task_id = continued?.task_id ?? options.taskId ?? newId();
  const secrets = teamSecrets(team);
  // The one redaction stage: every sink, the event stream and so SSE get masked events.
  const bus = new EventBus(task_id, now, { secrets, afterSeq: continued?.afterSeq ?? 0 });
  const agentName = options.agent ?? team.entry;
  const trace_dir = resolveTraceDir(options.traceDir);
  const resuming = continued?.replay.mode === "resume";

  let usage: Usage = ZERO_USAGE;
  bus.tap((e) => {
    if (e.type === "llm.response") usage = addUsage(usage, e.usage);
  });
  let writer: RunWriter | undefined;
  /** The embedded store this run opened for itself (a run given none), closed at its end. */
  let embedded: Store | undefined;
  for (const sink of options.sinks ?? []) bus.subscribe(sink);
  const provided = providedTools(team, options.tools ?? []);

  // A server that ends by itself mid-run ends the run, with its error (docs/mcp.md), through a signal of the
  // run's own joined to the caller's: made only for a team with an MCP server, as a run waiting on its model
  // held both signals (~2 KB, docs/performance.md#runs-waiting-on-a-slow-model).
  let serverLost: string | undefined;
  const halt = Object.values(team.tools).some((t) => t.type === "mcp") ? new AbortController() : undefined;
  const mcp = new McpServers((message) => {
    serverLost ??= message;
    halt?.abort();
  });
  const clients = new Map<string, ChatClient>();
  const makeClient = options.createClient ?? createChatClient;
  const budget = options.budget ?? team.budget;
  const session_id = options.sessionId ?? newId();
  const inSession = continued ? continued.replay.run?.in_session === true : options.sessionId !== undefined;
  const result = (async (): Promise<RunResult> => {
    let stores = options.store;
    let readBack: ReadBack | undefined;
    // The embedded store is loaded only for a run given none: a run on PostgreSQL loads nothing of SQLite.
    if (!stores) {
      const { sqliteStore } = await import("../store/sqlite/store.js");
      stores = embedded = sqliteStore(trace_dir);
      // What the store has written leaves memory; a late reader of `events` reads it back (through a handle of its own: the run's closes at its end).
      readBack = async (afterSeq) => {
        const reader = sqliteStore(trace_dir);
        try {
          return await reader.runs.eventsOfTask(task_id, afterSeq);
        } finally {
          await reader.close();
        }
      };
    }
    let traceError: string | undefined;
    if (options.trace !== false) {
      try {
        const opened = stores.runs.writer((seq) => bus.stored(seq));
        writer = opened;
        // The one write path: events and journal entries go through the run's writer, committed by the store
        // (docs/design/journal.md#when-it-is-written).
        bus.subscribe((event) => opened.append([event]));
        if (readBack) bus.spillTo(readBack);
      } catch (err) {
        traceError = `cannot open the trace store in ${options.store?.location ?? trace_dir}: ${describeError(err)}`;
      }
    }
    const journal = new Journal(task_id, options.journal !== false ? writer : undefined, secrets, now, continued?.replay);
    let attachments = options.attachments ?? [];
    // Refused before any request, and before anything is stored (docs/attachments.md).
    let attachmentError: RunError | undefined;
    try {
      if (continued?.attachments) attachments = await continued.attachments();
      checkAttachments(team, agentName, attachments);
      // The bytes are durable before the journal names them, so a resume finds them (a replay reads them from its source store).
      if (!continued && attachments.length && journal.active) await storeAttachments(() => stores.attachments(), attachments);
    } catch (err) {
      attachmentError = { code: err instanceof RuntimeError ? err.code : "STORE", message: describeError(err) };
    }
    const refs = attachments.map((a) => a.toJSON());
    if (!continued)
      journal.run({
        input: options.input,
        agent: agentName,
        session_id,
        ...(team.file ? { team_file: team.file } : {}),
        ...(inSession ? { in_session: true } : {}),
        ...(options.history ? { history: [...options.history] } : {}),
        ...(refs.length ? { attachments: refs } : {}),
      });
    const runs = writer && stores.runs;
    const decide =
      continued?.decide ??
      ((key: string, decision: Decision) => {
        const stored = runs?.decide(task_id, { key, ...decision, ts: now().toISOString() });
        if (stored)
          void stored.catch((err: unknown) => process.emitWarning(`cannot record a decision of run ${task_id}: ${describeError(err)}`, "TraceStoreWarning"));
      });
    const shared: RunShared = {
      team,
      bus,
      journal,
      task_id,
      session_id,
      inSession,
      ...(options.history ? { history: options.history } : {}),
      ...(attachments.length ? { attachments } : {}),
      trace_dir,
      stores,
      client(config) {
        let client = clients.get(config.name);
        if (!client) {
          client = makeClient(config);
          clients.set(config.name, client);
        }
        return client;
      },
      toolCache: new Map(),
      providedTools: typeof provided === "string" ? new Map() : provided,
      mcp,
      unavailableModels: new Set(),
      accounts: budget ? [new Account("the team", budget)] : [],
      approvals: new Approvals(continued?.replay.decisions ?? new Map(), decide, options.approver),
      inflight: new Set(),
      newId,
      now,
    };
    const scope = { agent_id: agentName };
    if (resuming) bus.emit({ type: "run.resumed", input: options.input, after_seq: continued?.afterSeq ?? 0 }, scope);
    else
      bus.emit(
        {
          type: "run.started",
          input: options.input,
          ...(inSession ? { session_id } : {}),
          ...(options.caller !== undefined ? { caller: options.caller } : {}),
          ...(refs.length ? { attachments: refs } : {}),
        },
        scope,
      );
    // The step stops when the caller cancels the run or, with an MCP server, when a server is lost.
    const signal = options.signal && halt ? AbortSignal.any([options.signal, halt.signal]) : (options.signal ?? halt?.signal ?? new AbortController().signal);
    let outcome: RunResult;
    if (traceError) {
      outcome = { task_id, result_type: "error", error: { code: "STORE", message: traceError }, usage };
    } else if (attachmentError) {
      outcome = { task_id, result_type: "error", error: attachmentError, usage };
    } else if (typeof provided === "string") {
      outcome = { task_id, result_type: "error", error: { code: "CONFIG_INVALID", message: provided }, usage };
    } else if (!team.agents[agentName]) {
      outcome = { task_id, result_type: "error", error: { code: "NOT_FOUND", message: `unknown agent '${agentName}'` }, usage };
    } else {
      const step = await runAgentStep(shared, agentName, options.input, signal);
      while (shared.inflight.size > 0) await Promise.allSettled([...shared.inflight]);
      // Stopped before the run ends, so that no server outlives its run's result.
      await mcp.close();
      outcome = { task_id, ...step, usage };
      // The team's budget stopped a call somewhere: the run ends with that error, even if a caller recovered.
      const spent = shared.accounts[0]?.exhausted;
      if (spent !== undefined) outcome = { task_id, result_type: "error", error: { code: "BUDGET", message: spent }, usage };
      if (shared.approvals.paused) outcome = { task_id, result_type: "paused", approvals: shared.approvals.pending, usage };
      // A guardrail blocked it somewhere, even in an agent called as a tool whose caller went on: the run is blocked.
      if (shared.blocked) {
        const { name, on, reason } = shared.blocked;
        outcome = {
          task_id,
          result_type: "blocked",
          guardrail: shared.blocked,
          error: { code: "BLOCKED", message: `blocked by guardrail '${name}' (${on}): ${reason}` },
          usage,
        };
      }
      if (serverLost !== undefined) outcome = { task_id, result_type: "error", error: { code: "TOOL_FAILED", message: serverLost }, usage };
      else if (options.signal?.aborted) outcome = { task_id, result_type: "error", error: INTERRUPTED, interrupted: true, usage };
    }
    // Replies a resume reused are not reported again, but they were spent.
    if (resuming && continued) usage = addUsage(usage, continued.replay.usage);
    const { task_id: _id, interrupted: _i, error, ...rest } = outcome;
    const finished = { ...rest, ...(error ? { error: error.message, error_code: error.code } : {}) };
    // The result is read back from the masked event, so an answer or error never carries a secret either.
    const statement = shared.accounts[0]?.statement();
    const event = bus.mask(bus.emit({ type: "run.finished", ...finished, usage, ...(statement ? { budget: statement } : {}) }, scope));
    bus.close();
    const masked = event.type === "run.finished" ? event : { ...finished, usage };
    // The session's conversation gains this turn (docs/sessions.md); a replay into a scratch store changes nothing.
    if (inSession && masked.result_type === "answer" && continued?.replay.mode !== "offline")
      await recordTurn(shared, redactString(options.input, secrets), masked.answer ?? "", now);
    return {
      task_id,
      result_type: masked.result_type,
      ...(masked.answer !== undefined ? { answer: masked.answer } : {}),
      ...(error ? { error: { code: error.code, message: masked.error ?? error.message } } : {}),
      ...(outcome.approvals ? { approvals: outcome.approvals } : {}),
      ...(outcome.guardrail ? { guardrail: outcome.guardrail } : {}),
      ...(outcome.interrupted ? { interrupted: true } : {}),
      ...(masked.result_type === "answer" && masked.verification ? { verification: masked.verification } : {}),
      usage,
    };
  })().finally(async () => {
    await mcp.close();
    await writer?.close();
    await embedded?.close();
  });

  return { task_id, events: { [Symbol.asyncIterator]: () => bus.events() }, result };
}
