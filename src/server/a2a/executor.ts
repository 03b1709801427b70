/**
 * The A2A agent executor of `runtime serve` (docs/protocols.md#a2a): a new
 * task starts a run through `launchRun` (the one run path), a message in a
 * task waiting for approval decides on its calls through `approveRun`, and
 * either way the run is followed through the store, its events told to the
 * SDK as task status and artifact updates.
 */
import { Role, TaskState, type Message, type Part } from "@a2a-js/sdk";
import { TaskNotCancelableError } from "@a2a-js/sdk/errors";
import {
  AgentEvent,
  DefaultExecutionEventBusManager,
  type AgentExecutor,
  type ExecutionEventBus,
  type ExecutionEventBusManager,
  type RequestContext,
  type ServerCallContext,
} from "@a2a-js/sdk/server";
import { RuntimeError, describeError } from "../../errors.js";
import { makeAttachment, type Attachment } from "../../models/attachment.js";
import type { RunEvent } from "../../events/types.js";
import { describeEvent } from "../../events/describe.js";
import { AnswerText } from "../../kinds/answer-text.js";
import { follow } from "../../store/follow.js";
import { approveRun, launchRun, moreOf, type ServerContext } from "../runs-api.js";
import { callerOf } from "./caller.js";
import { agentMessage, answerArtifact, finishedMetadata, finishedStatus, taskOfEvents } from "./task-view.js";

const SESSION_ID = /^[\w.:-]{1,128}$/;

export class RunExecutor implements AgentExecutor {
  constructor(
    private readonly ctx: ServerContext,
    private readonly buses: RunBuses,
  ) {}

  async execute(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    if (request.task) return this.answer(request, bus);
    const message = request.userMessage;
    const input = textOf(message.parts);
    const agent = typeof message.metadata?.["agent"] === "string" ? (message.metadata["agent"] as string) : undefined;
    // A message refused is a rejected task that says why (a throw here would reach the SDK's log with its stack).
    if (!input.trim()) return reject(request, bus, "the message has no text: send the question as a text part");
    let attachments: Attachment[];
    try {
      attachments = filesOf(message.parts);
    } catch (err) {
      return reject(request, bus, describeError(err));
    }
    if (!SESSION_ID.test(request.contextId)) return reject(request, bus, "contextId must be 1-128 characters of letters, digits, '_', '-', '.', ':'");
    if (agent !== undefined && !Object.hasOwn(this.ctx.team.agents, agent)) {
      return reject(request, bus, `unknown agent '${agent}' (agents: ${Object.keys(this.ctx.team.agents).join(", ")})`);
    }
    let run: Awaited<ReturnType<typeof launchRun>>;
    try {
      run = await launchRun(
        { ...this.ctx, caller: callerOf(request.context) },
        { input, session_id: request.contextId, ...(agent !== undefined ? { agent } : {}), ...(attachments.length ? { attachments } : {}) },
      );
    } catch (err) {
      // Too many runs in progress (429), the queue's store away: nothing started.
      return reject(request, bus, describeError(err));
    }
    // The SDK named the task before the run had an id: the run's id is the task's, and reaches the same bus.
    this.buses.alias(run.task_id, request.taskId);
    await this.buses.publish(
      run.task_id,
      bus,
      AgentEvent.task({
        id: run.task_id,
        contextId: request.contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [{ ...message, taskId: run.task_id }],
        metadata: { agent: agent ?? this.ctx.team.entry },
      }),
    );
    await this.tell(run.task_id, request.contextId, 0, run.more, bus);
  }

  /** A message in a task of a run waiting for approval: a decision on its calls, then the run goes on. */
  private async answer(request: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const taskId = request.taskId;
    const events = await this.ctx.store.eventsOfTask(taskId);
    const task = taskOfEvents(taskId, events);
    // The SDK found the task in the same store a moment ago.
    if (!task) return reject(request, bus, `no run with task_id ${taskId}`);
    bus.publish(AgentEvent.task(task));
    const say = (text: string) =>
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId: task.contextId,
          status: {
            state: TaskState.TASK_STATE_INPUT_REQUIRED,
            message: agentMessage(taskId, task.contextId, text, `${taskId}:${Date.now()}`),
            timestamp: new Date().toISOString(),
          },
          metadata: {},
        }),
      );
    if (task.status?.state !== TaskState.TASK_STATE_INPUT_REQUIRED) {
      // Going on already (approved through the approvals API): follow it to its end.
      return this.tell(taskId, task.contextId, events.at(-1)?.seq ?? 0, moreOf(this.ctx, taskId), bus);
    }
    const decision = decisionOf(request.userMessage);
    if (!decision) return say(`this task waits for approval: answer "approve" or "deny" (or a data part {"decision": "approve"})`);
    const after = events.at(-1)?.seq ?? 0;
    try {
      const decided = await approveRun({ ...this.ctx, caller: callerOf(request.context) }, taskId, decision);
      if (!decided.resumed) return say(`decided; still waiting for approval of ${decided.waiting.map((a) => `${a.tool} (call ${a.call_id})`).join(", ")}`);
    } catch (err) {
      return say(describeError(err));
    }
    await this.tell(taskId, task.contextId, after, moreOf(this.ctx, taskId), bus);
  }

  /** Follow a run from `after` and tell the SDK what happens, until it ends or pauses. */
  private async tell(taskId: string, contextId: string, after: number, more: ReturnType<typeof moreOf>, bus: ExecutionEventBus): Promise<void> {
    const status = (state: TaskState, text: string | undefined, at: Pick<RunEvent, "seq" | "ts">) =>
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state, message: text === undefined ? undefined : agentMessage(taskId, contextId, text, `${taskId}:${at.seq}`), timestamp: at.ts },
        metadata: {},
      });
    // Read on once the task's streaming clients have room (RunBuses.publish).
    const publish = (event: Parameters<ExecutionEventBus["publish"]>[0]) => this.buses.publish(taskId, bus, event);
    let why = "its process ended";
    // The answer as it is written, in chunks appended to the answer artifact; the whole answer replaces them at the end
    // (docs/protocols.md#answers-as-they-are-written).
    const answer = new AnswerText(this.ctx.team);
    let chunks = 0;
    try {
      for await (const { event } of follow(this.ctx.store, taskId, after, { more })) {
        const text = event.type === "run.finished" ? "" : await answer.feed(event);
        if (text) {
          await publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: answerArtifact(text), append: chunks++ > 0, lastChunk: false, metadata: {} }));
        }
        switch (event.type) {
          case "run.started":
          case "run.resumed":
            await publish(status(TaskState.TASK_STATE_WORKING, undefined, event));
            break;
          case "tool.started":
            await publish(status(TaskState.TASK_STATE_WORKING, describeEvent(event), event));
            break;
          case "tool.progress":
            if (event.message !== undefined || event.progress !== undefined) await publish(status(TaskState.TASK_STATE_WORKING, describeEvent(event), event));
            break;
          case "run.finished":
            if (event.result_type === "answer") {
              await publish(
                AgentEvent.artifactUpdate({ taskId, contextId, artifact: answerArtifact(event.answer ?? ""), append: false, lastChunk: true, metadata: {} }),
              );
            }
            await publish(AgentEvent.statusUpdate({ taskId, contextId, status: finishedStatus(taskId, contextId, event), metadata: finishedMetadata(event) }));
            return;
          default:
            break;
        }
      }
    } catch (err) {
      why = `the store could not be read: ${describeError(err)}`;
    }
    // No run.finished: the task is still working as far as anyone knows (GetTask reads the run), and can be resumed.
    const now = { seq: 0, ts: new Date().toISOString() };
    await publish(status(TaskState.TASK_STATE_WORKING, `the run's events stopped coming (${why}); POST /v1/runs/${taskId}/resume continues it`, now));
  }

  async cancelTask(taskId: string): Promise<void> {
    // Runs of this server are cancelled before the SDK asks (RunRequestHandler.cancelTask); what reaches here cannot be.
    const task = taskOfEvents(taskId, await this.ctx.store.eventsOfTask(taskId));
    if (task?.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED) {
      throw new TaskNotCancelableError(`task ${taskId} waits for approval and is not going on: answer "deny" to end it`);
    }
    throw new TaskNotCancelableError(`task ${taskId} is not going on in this server`);
  }
}

/** Answer a message that starts no run with a task rejected for `reason`. */
function reject(request: RequestContext, bus: ExecutionEventBus, reason: string): void {
  const { taskId, contextId } = request;
  bus.publish(
    AgentEvent.task({
      id: taskId,
      contextId,
      status: {
        state: TaskState.TASK_STATE_REJECTED,
        message: agentMessage(taskId, contextId, reason, `${taskId}:rejected`),
        timestamp: new Date().toISOString(),
      },
      artifacts: [],
      history: [request.userMessage],
      metadata: {},
    }),
  );
}

/** The text of a message's text parts. */
export function textOf(parts: readonly Part[]): string {
  return parts.flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : [])).join("\n");
}

/**
 * The file parts of a message with their bytes (`raw`), as the run's
 * attachments (docs/attachments.md); a file given by URL is refused: the
 * server fetches no address a client names. Throws USAGE.
 */
function filesOf(parts: readonly Part[]): Attachment[] {
  return parts.flatMap((p, i) => {
    if (p.content?.$case === "url") throw new RuntimeError("USAGE", `part ${i} gives a file by URL: send its bytes (raw) instead`);
    if (p.content?.$case !== "raw") return [];
    return [makeAttachment(p.filename || `file-${i + 1}`, Buffer.from(p.content.value), p.mediaType || undefined)];
  });
}

/** A decision given in a message: the text "approve" or "deny" (a reason may follow), or a data part {decision, call_id?, reason?}. */
function decisionOf(message: Message): { decision: "approve" | "deny"; call?: string; reason?: string } | undefined {
  if (message.role !== Role.ROLE_USER && message.role !== Role.ROLE_UNSPECIFIED) return undefined;
  for (const part of message.parts) {
    if (part.content?.$case !== "data") continue;
    const { decision, call_id, approval_id, reason } = (part.content.value ?? {}) as Record<string, unknown>;
    if (decision !== "approve" && decision !== "deny") continue;
    const call = typeof approval_id === "string" ? approval_id : typeof call_id === "string" ? call_id : undefined;
    return { decision, ...(call !== undefined ? { call } : {}), ...(typeof reason === "string" && reason ? { reason } : {}) };
  }
  const m = /^\s*(approve|deny)\b[\s:,.-]*(.*)$/is.exec(textOf(message.parts));
  if (!m) return undefined;
  const reason = (m[2] ?? "").trim();
  return { decision: (m[1] ?? "").toLowerCase() as "approve" | "deny", ...(reason ? { reason: reason.slice(0, 2000) } : {}) };
}

/**
 * Updates of a task that may wait in the SDK's queue for its slowest
 * streaming client before the executor reads on from the store: what a
 * client holds in memory is this many updates, the read being told and the
 * frame being written (docs/server.md#slow-readers).
 */
const AHEAD = 32;

/** A streaming client of a task: the updates published since it joined, and those it took. */
interface Reader {
  since: number;
  taken: number;
}

/**
 * The SDK's buses by task, where a run's id names the same bus as the id
 * the SDK gave its task before the run began (a cancel or a message in the
 * task names the run's id). They also pace a run's updates to the streaming
 * clients of its task (the SDK's queue has no bound of its own): the executor
 * publishes through `publish`, which waits while a client is `AHEAD` behind.
 */
export class RunBuses implements ExecutionEventBusManager {
  private readonly buses = new DefaultExecutionEventBusManager();
  /** Run id → the SDK's id of its task. */
  private readonly aliases = new Map<string, string>();
  /** By run id: the updates published, the streaming clients, and the executor waiting for room. */
  private readonly paces = new Map<string, { published: number; readers: Set<Reader>; wake?: () => void }>();

  /** Publish an update of run `taskId`, and wait until every streaming client of its task is less than `AHEAD` behind. */
  async publish(taskId: string, bus: ExecutionEventBus, event: Parameters<ExecutionEventBus["publish"]>[0]): Promise<void> {
    const pace = this.pace(taskId);
    pace.published++;
    bus.publish(event);
    while ([...pace.readers].some((r) => pace.published - r.since - r.taken > AHEAD)) await new Promise<void>((resolve) => (pace.wake = resolve));
    if (pace.readers.size === 0 && pace.published > 0) this.paces.delete(taskId);
  }

  /** A streaming client of run `taskId` joins: `took` as it takes each update, `close` when it leaves. */
  reader(taskId: string | undefined): { took(): void; close(): void } | undefined {
    if (taskId === undefined) return undefined;
    const pace = this.pace(taskId);
    const reader: Reader = { since: pace.published, taken: 0 };
    pace.readers.add(reader);
    const wake = () => {
      const w = pace.wake;
      pace.wake = undefined;
      w?.();
    };
    return {
      took: () => {
        reader.taken++;
        wake();
      },
      close: () => {
        pace.readers.delete(reader);
        if (pace.readers.size === 0 && this.paces.get(taskId) === pace) this.paces.delete(taskId);
        wake();
      },
    };
  }

  private pace(taskId: string) {
    let pace = this.paces.get(taskId);
    if (!pace) this.paces.set(taskId, (pace = { published: 0, readers: new Set() }));
    return pace;
  }

  alias(runId: string, sdkId: string): void {
    if (runId !== sdkId) this.aliases.set(runId, sdkId);
  }

  createOrGetByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus {
    return this.buses.createOrGetByTaskId(this.aliases.get(taskId) ?? taskId, context);
  }

  getByTaskId(taskId: string, context?: ServerCallContext): ExecutionEventBus | undefined {
    return this.buses.getByTaskId(this.aliases.get(taskId) ?? taskId, context);
  }

  cleanupByTaskId(taskId: string, context?: ServerCallContext): void {
    const sdkId = this.aliases.get(taskId) ?? taskId;
    this.buses.cleanupByTaskId(sdkId, context);
    for (const [run, sdk] of this.aliases) if (run === taskId || sdk === sdkId) this.aliases.delete(run);
  }
}
