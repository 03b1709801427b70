import { newId as newTimeOrderedId } from "../ids.js";
import type { Budget, ModelConfig, ResolvedTeam } from "../config/types.js";
import { INTERRUPTED, RuntimeError, describeError, type RunError } from "../errors.js";
import { redactString } from "../redact.js";
import { EventBus, type EventSink } from "../events/bus.js";
import { addUsage } from "../events/usage.js";
import { ZERO_USAGE, type PendingApproval, type RunEvent, type Usage, type Verification } from "../events/types.js";
import { createChatClient } from "../models/factory.js";
import { McpServers } from "../tools/mcp/servers.js";
import type { ChatClient } from "../models/types.js";
import type { Tool } from "../tools/types.js";
import type { Blocked } from "../guardrails/guard.js";
import { runAgentStep, type RunShared } from "./agent-step.js";
import { callerSessions } from "../store/caller-sessions.js";
import { Journal } from "./journal.js";
import { providedTools } from "./resolve-tools.js";
import { teamSecrets } from "./secrets.js";
import { resolveTraceDir } from "./trace-dir.js";
import { Account } from "./budget.js";
import { Approvals, type Approver, type Decision } from "./approvals.js";
import type { Replay } from "./replay.js";
import type { Store } from "../store/store.js";
import { openStore } from "../store/create.js";
import type { RunWriter } from "../store/runs.js";
import type { Exchange } from "../store/conversations.js";
import type { Attachment, AttachmentRef } from "../models/attachment.js";
import { checkAttachments, storeAttachments } from "./attachments.js";
import { runEvents } from "./run-events.js";

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
  /**
   * Every event of the run, from the first, in order, as its store keeps
   * them: read through the store's follow (src/store/follow.ts), so however
   * long the run, and whenever iteration starts. A run given a store must
   * keep it open while its events are read; with `trace: false` nothing is
   * stored and this is empty (`sinks` still get every event).
   */
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
  /** The stored run's attachments, read back from its store (src/engine/attachments.ts); `own` is the store the run goes on in. */
  attachments?: (own: Store) => Promise<Attachment[]>;
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
  const run = setUp(team, options, continued);
  const result = conduct(run).finally(() => release(run));
  // Read back from the store the run writes to: nothing with tracing off.
  const from = options.trace === false ? undefined : (options.store ?? run.trace_dir);
  return { task_id: run.task_id, events: runEvents(from, run.task_id, continued?.afterSeq ?? 0, result), result };
}

/** A run under way: what its named steps share. */
type Conduct = ReturnType<typeof setUp>;

/** The run's ids, its bus (sinks and the usage count on it) and its MCP servers. */
function setUp(team: ResolvedTeam, options: RunOptions, continued: Continued | undefined) {
  const newId = options.newId ?? newTimeOrderedId;
  const now = options.now ?? (() => new Date());
  const task_id = continued?.task_id ?? options.taskId ?? newId();
  const secrets = teamSecrets(team);
  // The one redaction stage: every sink, and so the store and every stream, get masked events.
  const bus = new EventBus(task_id, now, { secrets, afterSeq: continued?.afterSeq ?? 0 });
  // A server that ends by itself mid-run ends the run, with its error (docs/mcp.md), through a signal of the
  // run's own joined to the caller's: made only for a team with an MCP server, as a run waiting on its model
  // held both signals (~2 KB, docs/performance.md#runs-waiting-on-a-slow-model).
  const halt = Object.values(team.tools).some((t) => t.type === "mcp") ? new AbortController() : undefined;
  const lost: { server?: string } = {};
  const run = {
    team,
    options,
    continued,
    task_id,
    session_id: options.sessionId ?? newId(),
    /** The caller named the session (docs/sessions.md). */
    inSession: continued ? continued.replay.run?.in_session === true : options.sessionId !== undefined,
    agentName: options.agent ?? team.entry,
    trace_dir: resolveTraceDir(options.traceDir),
    secrets,
    bus,
    usage: ZERO_USAGE,
    halt,
    lost,
    mcp: new McpServers((message) => {
      lost.server ??= message;
      halt?.abort();
    }),
    provided: providedTools(team, options.tools ?? []),
    newId,
    now,
    /** The store the run opened for itself (closed at its end), and its writer. */
    own: undefined as Store | undefined,
    writer: undefined as RunWriter | undefined,
  };
  bus.tap((e) => {
    if (e.type === "llm.response") run.usage = addUsage(run.usage, e.usage);
  });
  for (const sink of options.sinks ?? []) bus.subscribe(sink);
  return run;
}

/** The run from its store to its result. */
async function conduct(run: Conduct): Promise<RunResult> {
  const { options, continued } = run;
  // The default store is chosen by the composition root (src/store/create.ts): a run given one loads nothing of SQLite.
  const store = options.store ?? (run.own = await openStore(run.trace_dir));
  const storeError = openWriter(run, store);
  const journal = new Journal(run.task_id, options.journal !== false ? run.writer : undefined, run.secrets, run.now, continued?.replay);
  const { attachments, attachmentError } = await takeAttachments(run, store, journal);
  const refs = attachments.map((a) => a.toJSON());
  if (!continued)
    journal.run({
      input: options.input,
      agent: run.agentName,
      session_id: run.session_id,
      ...(run.team.file ? { team_file: run.team.file } : {}),
      ...(run.inSession ? { in_session: true } : {}),
      ...(options.history ? { history: [...options.history] } : {}),
      ...(refs.length ? { attachments: refs } : {}),
    });
  const shared = shareRun(run, store, journal, attachments);
  announce(run, refs);
  const failure = storeError ?? attachmentError ?? unrunnable(run);
  const outcome = failure ? { task_id: run.task_id, result_type: "error" as const, error: failure, usage: run.usage } : await runEntry(run, shared);
  return finish(run, shared, outcome);
}

/**
 * The run's writer, every event going through it: the one write path of
 * events and journal entries, committed by the store
 * (docs/design/journal.md#when-it-is-written). Returns why it cannot be opened.
 */
function openWriter(run: Conduct, store: Store): RunError | undefined {
  if (run.options.trace === false) return undefined;
  try {
    const writer = (run.writer = store.runs.writer());
    run.bus.subscribe((event) => writer.append([event]));
    return undefined;
  } catch (err) {
    return { code: "STORE", message: `cannot open the trace store in ${store.location}: ${describeError(err)}` };
  }
}

/** The run's files: checked before any request, and kept in its store before anything names them (docs/attachments.md). */
async function takeAttachments(run: Conduct, store: Store, journal: Journal): Promise<{ attachments: readonly Attachment[]; attachmentError?: RunError }> {
  const { continued } = run;
  let attachments = run.options.attachments ?? [];
  try {
    if (continued?.attachments) attachments = await continued.attachments(store);
    checkAttachments(run.team, run.agentName, attachments);
    // The bytes are durable before the journal names them, so a resume finds them (a replay reads them from its source store).
    if (!continued && attachments.length && journal.active) await storeAttachments(() => store.attachments(), attachments);
    return { attachments };
  } catch (err) {
    return { attachments, attachmentError: { code: err instanceof RuntimeError ? err.code : "STORE", message: describeError(err) } };
  }
}

/** What every step of the run shares (src/engine/agent-step.ts). */
function shareRun(run: Conduct, stores: Store, journal: Journal, attachments: readonly Attachment[]): RunShared {
  const { options, continued, task_id, now } = run;
  const runs = run.writer && stores.runs;
  const decide =
    continued?.decide ??
    ((key: string, decision: Decision) => {
      const stored = runs?.decide(task_id, { key, ...decision, ts: now().toISOString() });
      if (stored)
        void stored.catch((err: unknown) => process.emitWarning(`cannot record a decision of run ${task_id}: ${describeError(err)}`, "TraceStoreWarning"));
    });
  const clients = new Map<string, ChatClient>();
  const makeClient = options.createClient ?? createChatClient;
  const budget = options.budget ?? run.team.budget;
  return {
    team: run.team,
    bus: run.bus,
    journal,
    task_id,
    session_id: run.session_id,
    inSession: run.inSession,
    ...(options.history ? { history: options.history } : {}),
    ...(attachments.length ? { attachments } : {}),
    trace_dir: run.trace_dir,
    // A server's caller has sessions of its own (docs/sessions.md#whose-session).
    stores: callerSessions(stores, options.caller),
    client(config) {
      let client = clients.get(config.name);
      if (!client) {
        client = makeClient(config);
        clients.set(config.name, client);
      }
      return client;
    },
    toolCache: new Map(),
    providedTools: typeof run.provided === "string" ? new Map() : run.provided,
    mcp: run.mcp,
    unavailableModels: new Set(),
    accounts: budget ? [new Account("the team", budget)] : [],
    approvals: new Approvals(continued?.replay.decisions ?? new Map(), decide, options.approver),
    inflight: new Set(),
    newId: run.newId,
    now,
  };
}

/** `run.started`, or `run.resumed` for a resume. */
function announce(run: Conduct, refs: AttachmentRef[]): void {
  const { options, continued } = run;
  const scope = { agent_id: run.agentName };
  if (continued?.replay.mode === "resume") run.bus.emit({ type: "run.resumed", input: options.input, after_seq: continued.afterSeq }, scope);
  else
    run.bus.emit(
      {
        type: "run.started",
        input: options.input,
        ...(run.inSession ? { session_id: run.session_id } : {}),
        ...(options.caller !== undefined ? { caller: options.caller } : {}),
        ...(refs.length ? { attachments: refs } : {}),
      },
      scope,
    );
}

/** Why the run cannot start its entry agent: tools given in code that the team cannot take, or no such agent. */
function unrunnable(run: Conduct): RunError | undefined {
  if (typeof run.provided === "string") return { code: "CONFIG_INVALID", message: run.provided };
  if (!run.team.agents[run.agentName]) return { code: "NOT_FOUND", message: `unknown agent '${run.agentName}'` };
  return undefined;
}

/** Run the entry agent, wait for every step it started, and read how the run ended. */
async function runEntry(run: Conduct, shared: RunShared): Promise<RunResult> {
  const { options, halt, task_id } = run;
  // The step stops when the caller cancels the run or, with an MCP server, when a server is lost.
  const signal = options.signal && halt ? AbortSignal.any([options.signal, halt.signal]) : (options.signal ?? halt?.signal ?? new AbortController().signal);
  const step = await runAgentStep(shared, run.agentName, options.input, signal);
  while (shared.inflight.size > 0) await Promise.allSettled([...shared.inflight]);
  // Stopped before the run ends, so that no server outlives its run's result.
  await run.mcp.close();
  const usage = run.usage;
  let outcome: RunResult = { task_id, ...step, usage };
  // The team's budget stopped a call somewhere: the run ends with that error, even if a caller recovered.
  const spent = shared.accounts[0]?.exhausted;
  if (spent !== undefined) outcome = { task_id, result_type: "error", error: { code: "BUDGET", message: spent }, usage };
  if (shared.approvals.paused) outcome = { task_id, result_type: "paused", approvals: shared.approvals.pending, usage };
  // A guardrail blocked it somewhere, even in an agent called as a tool whose caller went on: the run is blocked.
  if (shared.blocked) {
    const { name, on, reason } = shared.blocked;
    const error = { code: "BLOCKED" as const, message: `blocked by guardrail '${name}' (${on}): ${reason}` };
    outcome = { task_id, result_type: "blocked", guardrail: shared.blocked, error, usage };
  }
  if (run.lost.server !== undefined) outcome = { task_id, result_type: "error", error: { code: "TOOL_FAILED", message: run.lost.server }, usage };
  else if (options.signal?.aborted) outcome = { task_id, result_type: "error", error: INTERRUPTED, interrupted: true, usage };
  return outcome;
}

/** `run.finished`, the session's new turn, and the result, read back from the masked event so it never carries a secret. */
async function finish(run: Conduct, shared: RunShared, outcome: RunResult): Promise<RunResult> {
  const { bus, continued, task_id } = run;
  // Replies a resume reused are not reported again, but they were spent.
  const usage = continued?.replay.mode === "resume" ? addUsage(run.usage, continued.replay.usage) : run.usage;
  const { task_id: _id, interrupted: _i, error, ...rest } = outcome;
  const finished = { ...rest, ...(error ? { error: error.message, error_code: error.code } : {}) };
  const statement = shared.accounts[0]?.statement();
  const event = bus.mask(bus.emit({ type: "run.finished", ...finished, usage, ...(statement ? { budget: statement } : {}) }, { agent_id: run.agentName }));
  bus.close();
  const masked = event.type === "run.finished" ? event : { ...finished, usage };
  // The session's conversation gains this turn (docs/sessions.md); a replay into a scratch store changes nothing.
  if (run.inSession && masked.result_type === "answer" && continued?.replay.mode !== "offline")
    await recordTurn(shared, redactString(run.options.input, run.secrets), masked.answer ?? "", run.now);
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
}

/** Everything the run held: its MCP servers, its writer (what it queued is committed) and the store it opened. */
async function release(run: Conduct): Promise<void> {
  await run.mcp.close();
  await run.writer?.close();
  await run.own?.close();
}
