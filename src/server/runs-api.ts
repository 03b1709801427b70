import type { IncomingMessage, ServerResponse } from "node:http";
import type { ResolvedTeam } from "../config/types.js";
import type { PendingApproval, RunEvent } from "../events/types.js";
import type { Budget } from "../config/types.js";
import { newId } from "../ids.js";
import { decideApprovals as decide } from "../engine/resume.js";
import { follow, type FollowOptions } from "../store/follow.js";
import type { Exchange } from "../store/conversations.js";
import { RUN_STATUSES, type RunStore, type Watch } from "../store/runs.js";
import { whileQueued } from "../queue/follow.js";
import { checkAttachments, storeAttachments } from "../engine/attachments.js";
import type { AttachmentStore } from "../store/attachments.js";
import { makeAttachment, type Attachment } from "../models/attachment.js";
import type { RunQueue } from "../queue/run-queue.js";
import { BASE_HEADERS, HttpError, readJsonBody, sendJson } from "./http.js";
import type { LiveRuns } from "./live-runs.js";
import { EventStream, lastEventId } from "./sse.js";
import { checkRun, ownRuns, requireScope, mayReach } from "./access.js";
import type { Caller } from "./auth.js";

/** What the run endpoints of a server share. */
export interface ServerContext {
  team: ResolvedTeam;
  traceDir: string;
  /** Where runs are read from (and kept, for runs of this process). */
  store: RunStore;
  live: LiveRuns;
  /**
   * With a PostgreSQL store (docs/scale-out.md): runs are queued for workers
   * instead of run here, and followed through the store; `listening` is the
   * server's own watch of it (readiness: the LISTEN connection is up);
   * `attachments` where a run's files are kept for its worker.
   */
  queued?: { queue: RunQueue; listening: Watch; attachments: () => AttachmentStore };
  maxBodyBytes: number;
  maxLiveRuns: number;
  /** How long an SSE client may read nothing before it is dropped (src/server/sse.ts). */
  stallLimitMs: number;
  /** The run streams being sent: the server lets them end before it closes (its `close()`). */
  streams: Set<Promise<void>>;
}

/** What a request's handlers get: the server's context and the caller its token names (src/server/access.ts checks what it may reach). */
export interface ApiContext extends ServerContext {
  caller: Caller;
}

/** The body of `POST /v1/runs`. */
export interface StartRunBody {
  input: string;
  agent?: string;
  session_id?: string;
  /** Files for the run, read from `attachments: [{name, media_type, data}]` (base64; docs/attachments.md). */
  attachments?: Attachment[];
}

const BODY_KEYS = new Set(["input", "agent", "session_id", "attachments"]);

/** Check a `POST /v1/runs` body; every problem is a 400 naming the field. */
export function parseStartRun(body: unknown, team: ResolvedTeam): StartRunBody {
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new HttpError(400, 'the body must be a JSON object such as {"input": "..."}');
  }
  const record = body as Record<string, unknown>;
  const unknown = Object.keys(record).filter((k) => !BODY_KEYS.has(k));
  if (unknown.length) throw new HttpError(400, `unknown field(s) ${unknown.join(", ")}; expected input, agent, session_id, attachments`);
  const { input, agent, session_id } = record;
  if (typeof input !== "string" || !input.trim()) throw new HttpError(400, "input is required: a non-empty string");
  if (agent !== undefined && typeof agent !== "string") throw new HttpError(400, "agent must be a string");
  if (agent !== undefined && !Object.hasOwn(team.agents, agent)) {
    throw new HttpError(400, `unknown agent '${agent}' (agents: ${Object.keys(team.agents).join(", ")})`);
  }
  if (session_id !== undefined && (typeof session_id !== "string" || !/^[\w.:-]{1,128}$/.test(session_id))) {
    throw new HttpError(400, "session_id must be 1-128 characters of letters, digits, '_', '-', '.', ':'");
  }
  const attachments = record["attachments"] === undefined ? [] : attachmentsOf(record["attachments"]);
  return {
    input,
    ...(agent !== undefined ? { agent } : {}),
    ...(session_id !== undefined ? { session_id } : {}),
    ...(attachments.length ? { attachments } : {}),
  };
}

/** `attachments: [{name, media_type, data}]`, data in base64; a 400 naming the item for anything else, a file past the caps or of a type not taken. */
function attachmentsOf(given: unknown): Attachment[] {
  if (!Array.isArray(given)) throw new HttpError(400, "attachments must be an array of {name, media_type, data} (data in base64)");
  return given.map((item: unknown, i) => {
    const { name, media_type, data, ...rest } = (item ?? {}) as Record<string, unknown>;
    if (item === null || typeof item !== "object" || Object.keys(rest).length)
      throw new HttpError(400, `attachments[${i}] must be an object {name, media_type, data} (data in base64)`);
    if (typeof name !== "string" || !name.trim() || name.length > 255)
      throw new HttpError(400, `attachments[${i}].name must be a file name of 1-255 characters`);
    if (media_type !== undefined && typeof media_type !== "string") throw new HttpError(400, `attachments[${i}].media_type must be a string`);
    if (typeof data !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(data)) throw new HttpError(400, `attachments[${i}].data must be the file's bytes in base64`);
    return makeAttachment(name, Buffer.from(data, "base64"), media_type);
  });
}

/**
 * A run started through any of the server's protocols (docs/protocols.md):
 * an ordinary run, listed, traced, resumable, budgeted and approvable like
 * every other. `more` tells a follower of the store whether more events may
 * come (src/store/follow.ts); `cancel` is there for a run of this process (a
 * queued run belongs to the workers), and does nothing once it has finished.
 */
export interface LaunchedRun {
  task_id: string;
  more: NonNullable<FollowOptions["more"]>;
  cancel?: () => void;
}

/** What a protocol asks `launchRun` for: a run's body, and the conversation before its input when the client keeps it. */
export interface LaunchRequest extends StartRunBody {
  /** The earlier turns the client sent (`RunOptions.history`): read instead of the session's stored ones. */
  history?: Exchange[];
}

/**
 * Start a run for the request's caller, its owner: queued for workers with a
 * PostgreSQL store, else here (429 past `maxLiveRuns`, or past the caller's
 * `runs_max`). The caller needs the `run` scope; a session it names is its
 * own whatever other callers name theirs (src/store/caller-sessions.ts).
 */
export async function launchRun(ctx: ApiContext, body: LaunchRequest): Promise<LaunchedRun> {
  const { caller } = ctx;
  requireScope(caller, "run");
  // Refused before the run starts (a 400), as the CLI refuses them before any request (docs/attachments.md).
  const attachments = body.attachments ?? [];
  checkAttachments(ctx.team, body.agent ?? ctx.team.entry, attachments);
  if (caller.runsMax !== undefined) {
    // Counted across the store's servers with a queue; two requests at the same moment may both pass.
    const going = ctx.queued ? await ctx.queued.queue.liveOf(caller.name) : ctx.live.countOf(caller.name);
    if (going >= caller.runsMax) {
      throw new HttpError(429, `caller ${caller.name} has ${going} runs in progress, its runs_max; retry when one has finished`, { "retry-after": "1" });
    }
  }
  if (ctx.queued) {
    const task_id = newId();
    // The bytes go to the store by hash, the request names them: the worker reads the same bytes back (docs/attachments.md).
    if (attachments.length) await storeAttachments(ctx.queued.attachments, attachments);
    await ctx.queued.queue.enqueue({
      task_id,
      team: ctx.team.name,
      input: body.input,
      ...(body.agent !== undefined ? { agent: body.agent } : {}),
      ...(body.session_id !== undefined ? { session_id: body.session_id } : {}),
      ...(body.history ? { history: body.history } : {}),
      ...(attachments.length ? { attachments: attachments.map((a) => a.toJSON()) } : {}),
      caller: caller.name,
    });
    return { task_id, more: moreOf(ctx, task_id) };
  }
  if (ctx.live.size >= ctx.maxLiveRuns) {
    throw new HttpError(429, `too many runs in progress (${ctx.maxLiveRuns} at most); retry later`, { "retry-after": "1" });
  }
  const run = ctx.live.start(ctx.team, {
    input: body.input,
    traceDir: ctx.traceDir,
    ...(body.agent !== undefined ? { agent: body.agent } : {}),
    ...(body.session_id !== undefined ? { sessionId: body.session_id } : {}),
    ...(body.history ? { history: body.history } : {}),
    ...(attachments.length ? { attachments } : {}),
    caller: caller.name,
  });
  return {
    task_id: run.task_id,
    more: moreOf(ctx, run.task_id),
    cancel: () => {
      if (!run.finished) run.cancel();
    },
  };
}

/**
 * `POST /v1/runs`: start a run and stream its events until run.finished. The
 * client going away cancels a run of this process (its trace is kept); a
 * client dropped for reading nothing for the stall limit does not
 * (docs/server.md#slow-readers): the run finishes and is stored.
 * With `Prefer: respond-async`, the answer is 202 with the task_id at once and
 * the run goes on alone: follow it with `GET /v1/runs/:task_id/events`.
 */
export async function startRun(ctx: ApiContext, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = parseStartRun(await readJsonBody(req, ctx.maxBodyBytes), ctx.team);
  const run = await launchRun(ctx, body);
  if (prefersAsync(req)) {
    res.setHeader("x-task-id", run.task_id);
    res.setHeader("preference-applied", "respond-async");
    sendJson(res, 202, { task_id: run.task_id, events: `/v1/runs/${encodeURIComponent(run.task_id)}/events` });
    return;
  }
  const stream = new EventStream(res, { headers: { "x-task-id": run.task_id }, stallLimitMs: ctx.stallLimitMs });
  stream.onClose(() => {
    // A client dropped for reading nothing was not cancelling: it may follow on with GET .../events.
    if (!stream.dropped && !res.writableFinished) run.cancel?.();
  });
  void streamRun(ctx, stream, run.task_id, 0, run.more);
}

/** `Prefer: respond-async` (RFC 7240), among other preferences or alone. */
function prefersAsync(req: IncomingMessage): boolean {
  const prefer = req.headers.prefer;
  return (Array.isArray(prefer) ? prefer.join(",") : (prefer ?? "")).split(/[,;]/).some((p) => p.trim().toLowerCase() === "respond-async");
}

/**
 * `GET /v1/runs/:task_id/events`: the run's events after Last-Event-ID, then,
 * while the run is live in this process, each new one until run.finished.
 */
export async function streamEvents(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, taskId: string): Promise<void> {
  await checkRun(ctx, taskId, "read");
  const after = lastEventId(req.headers["last-event-id"]);
  const state = ctx.queued ? await ctx.queued.queue.stateOf(taskId) : undefined;
  const going = ctx.queued ? state === "queued" || state === "running" : ctx.live.get(taskId) !== undefined;
  const last = await ctx.store.lastSeq(taskId);
  if (!going && state === undefined && last === 0) throw new HttpError(404, `no run with task_id ${taskId}`);
  // A client that has every event of a run that has ended is told so, and an EventSource stops reconnecting.
  if (!going && after > 0 && after >= last) {
    res.writeHead(204, { ...BASE_HEADERS, "x-task-id": taskId }).end();
    return;
  }
  const more = moreOf(ctx, taskId);
  void streamRun(ctx, new EventStream(res, { headers: { "x-task-id": taskId }, stallLimitMs: ctx.stallLimitMs }), taskId, after, more);
}

/**
 * Send a run's events to `stream` as the store's follow gives them
 * (docs/server.md#where-an-event-reaches-the-stream), each once the client
 * has taken the one before: a client behind the run reads on from the store.
 * Ends with the follow; stops when the client leaves or is dropped.
 */
function streamRun(ctx: ApiContext, stream: EventStream, taskId: string, after: number, more: FollowOptions["more"]): Promise<void> {
  const sending = sendRun(ctx, stream, taskId, after, more);
  ctx.streams.add(sending);
  void sending.finally(() => ctx.streams.delete(sending));
  return sending;
}

async function sendRun(ctx: ApiContext, stream: EventStream, taskId: string, after: number, more: FollowOptions["more"]): Promise<void> {
  const gone = new AbortController();
  stream.onClose(() => gone.abort());
  try {
    for await (const { event } of follow(ctx.store, taskId, after, { ...(more ? { more } : {}), signal: gone.signal })) {
      if (!(await stream.send(event))) return;
    }
  } catch {
    // The store failed: the stream ends, and the client may reconnect with Last-Event-ID.
  }
  stream.end();
}

/** `FollowOptions.more` for a run of this process: more may come until it has emitted its run.finished and the follower has read that far. */
function whileLive(live: LiveRuns, taskId: string): NonNullable<FollowOptions["more"]> {
  return (seq) => {
    const run = live.get(taskId);
    return run !== undefined && (run.finishedSeq === undefined || seq < run.finishedSeq);
  };
}

/** `GET /v1/runs/:task_id`: the run's summary and every event. */
export async function getRun(ctx: ApiContext, res: ServerResponse, taskId: string): Promise<void> {
  await checkRun(ctx, taskId, "read");
  const run = await ctx.store.run(taskId);
  if (!run) throw new HttpError(404, `no run with task_id ${taskId}`);
  const events = await ctx.store.eventsOfTask(taskId);
  const state = ctx.queued ? await ctx.queued.queue.stateOf(taskId) : undefined;
  sendJson(res, 200, { run, live: ctx.live.get(taskId) !== undefined || state === "queued" || state === "running", events });
}

/**
 * `GET /v1/runs?agent=NAME&session=ID&status=S&limit=N`: runs, newest first;
 * with `agent`, the runs in which it ran at any depth; with `session`, the
 * runs of that conversation (docs/sessions.md); with `status`, those that
 * ended so (answer, error, paused) or have not (running).
 */
export async function listRuns(ctx: ApiContext, res: ServerResponse, query: URLSearchParams): Promise<void> {
  const limitText = query.get("limit") ?? "20";
  const limit = Number(limitText);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new HttpError(400, `limit must be an integer from 1 to 1000, got "${limitText}"`);
  const agent = query.get("agent");
  const session = query.get("session");
  const given = query.get("status");
  const status = RUN_STATUSES.find((s) => s === given);
  if (given !== null && given !== "" && status === undefined) throw new HttpError(400, `status must be one of ${RUN_STATUSES.join(", ")}, got "${given}"`);
  const runs = await ctx.store.listRuns({
    ...ownRuns(ctx),
    limit,
    ...(agent !== null && agent !== "" ? { agent } : {}),
    ...(session !== null && session !== "" ? { session } : {}),
    ...(status !== undefined ? { status } : {}),
  });
  sendJson(res, 200, { runs });
}

/** `GET /v1/traces/:trace_id`: the events of one recursion. */
export async function getTrace(ctx: ApiContext, res: ServerResponse, traceId: string): Promise<void> {
  requireScope(ctx.caller, "read");
  const events: RunEvent[] = await ctx.store.eventsOfTrace(traceId);
  const runs = [...new Set(events.map((e) => e.task_id))];
  // A recursion of someone else's run is as one that does not exist.
  const reachable = await Promise.all(runs.map((task) => mayReach(ctx, task, "read")));
  if (events.length === 0 || reachable.includes(false)) throw new HttpError(404, `no events with trace_id ${traceId}`);
  sendJson(res, 200, { trace_id: traceId, events });
}

/**
 * `POST /v1/runs/:task_id/resume` (`{budget?}`): continue a stopped run from
 * its journal in this server; follow it with `GET .../events`.
 */
export async function resumeRunApi(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, taskId: string): Promise<void> {
  await checkRun(ctx, taskId, "run");
  const body = await readJsonBody(req, ctx.maxBodyBytes, { optional: true });
  const budget = parseBudget(body);
  await resumeLive(ctx, taskId, budget);
  sendJson(res, 202, { task_id: taskId, resumed: true });
}

/**
 * `POST /v1/runs/:task_id/approvals` (`{decision: "approve" | "deny",
 * approval_id? | call_id?, reason?}`): decide on calls a paused run waits
 * for (all of them when none is named); once none is left waiting, the run
 * goes on in this server.
 */
export async function decideApprovals(ctx: ApiContext, req: IncomingMessage, res: ServerResponse, taskId: string): Promise<void> {
  const body = await readJsonBody(req, ctx.maxBodyBytes);
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw new HttpError(400, 'the body must be a JSON object such as {"decision": "approve"}');
  const { decision, approval_id, call_id, reason, ...rest } = body as Record<string, unknown>;
  if (Object.keys(rest).length) throw new HttpError(400, `unknown field(s) ${Object.keys(rest).join(", ")}; expected decision, approval_id, call_id, reason`);
  if (decision !== "approve" && decision !== "deny") throw new HttpError(400, 'decision must be "approve" or "deny"');
  for (const [name, value] of Object.entries({ approval_id, call_id, reason })) {
    if (value !== undefined && (typeof value !== "string" || value.length > 2000))
      throw new HttpError(400, `${name} must be a string of at most 2000 characters`);
  }
  const call = (approval_id ?? call_id) as string | undefined;
  const decided = await approveRun(ctx, taskId, {
    decision,
    ...(call !== undefined ? { call } : {}),
    ...(typeof reason === "string" && reason ? { reason } : {}),
  });
  sendJson(res, 202, decided);
}

/**
 * Decide on calls a paused run waits for (`call`: an approval id or call id;
 * all when undefined), and once none is left waiting, go on with the run: the
 * one way every protocol approves (the approvals endpoint, A2A).
 */
export async function approveRun(
  ctx: ApiContext,
  taskId: string,
  options: { decision: "approve" | "deny"; call?: string; reason?: string },
): Promise<{ task_id: string; decided: PendingApproval[]; waiting: PendingApproval[]; resumed: boolean }> {
  await checkRun(ctx, taskId, "approve");
  if (ctx.live.get(taskId)) throw new HttpError(409, `run ${taskId} is going on; it is not waiting for an approval`);
  // The whole id, as on every route: the CLI's shortened ids (TraceStore.taskIdsMatching) are for people typing.
  if ((await ctx.store.lastSeq(taskId)) === 0) throw new HttpError(404, `no run with task_id ${taskId}`);
  // A NOT_FOUND thrown here answers 404, as any error's code decides (httpStatusOf).
  const decided = await decide(ctx.store, taskId, options);
  const resumed = decided.waiting.length === 0;
  if (resumed) await resumeLive(ctx, decided.task_id, undefined);
  return { task_id: decided.task_id, decided: decided.decided, waiting: decided.waiting, resumed };
}

/** `FollowOptions.more` for a run of this server: while a worker holds it (a PostgreSQL store), else while it is live here. */
export function moreOf(ctx: ServerContext, taskId: string): NonNullable<FollowOptions["more"]> {
  return ctx.queued ? whileQueued(ctx.queued.queue, taskId) : whileLive(ctx.live, taskId);
}

async function resumeLive(ctx: ApiContext, taskId: string, budget: Budget | undefined): Promise<void> {
  if (ctx.queued) {
    // On whichever worker takes it, from its journal.
    if (await ctx.queued.queue.requeue(taskId, budget ? { ...ctx.team.budget, ...budget } : undefined)) return;
    const state = await ctx.queued.queue.stateOf(taskId);
    if (state === undefined) throw new HttpError(404, `no queued run with task_id ${taskId}`);
    throw new HttpError(409, `run ${taskId} is ${state} already`);
  }
  if (ctx.live.get(taskId)) throw new HttpError(409, `run ${taskId} is going on already`);
  if (ctx.live.size >= ctx.maxLiveRuns) {
    throw new HttpError(429, `too many runs in progress (${ctx.maxLiveRuns} at most); retry later`, { "retry-after": "1" });
  }
  await ctx.live.resume(ctx.team, { taskId, traceDir: ctx.traceDir, ...(budget ? { budget: { ...ctx.team.budget, ...budget } } : {}) });
}

const BUDGET_KEYS = new Set(["max_tokens", "max_model_calls", "max_tool_calls", "max_seconds", "max_cost_usd"]);

function parseBudget(body: unknown): Budget | undefined {
  if (body === undefined) return undefined;
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw new HttpError(400, 'the body must be a JSON object such as {"budget": {"max_tokens": 50000}}');
  const { budget, ...rest } = body as Record<string, unknown>;
  if (Object.keys(rest).length) throw new HttpError(400, `unknown field(s) ${Object.keys(rest).join(", ")}; expected budget`);
  if (budget === undefined) return undefined;
  if (budget === null || typeof budget !== "object" || Array.isArray(budget)) throw new HttpError(400, "budget must be an object of limits");
  const out: Record<string, number> = {};
  for (const [key, value] of Object.entries(budget)) {
    if (!BUDGET_KEYS.has(key)) throw new HttpError(400, `budget.${key} is not a limit (${[...BUDGET_KEYS].join(", ")})`);
    if (typeof value !== "number" || !(value > 0) || !Number.isFinite(value)) throw new HttpError(400, `budget.${key} must be a positive number`);
    out[key] = value;
  }
  return out as Budget;
}
