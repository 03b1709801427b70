/**
 * A run seen as an A2A task (docs/protocols.md#a2a): the run store is the
 * truth, and a task is read from a run's events when a request first asks for
 * it. Same id as the run; `contextId` is its session; its state follows the
 * run: `working` until its run.finished, then `completed` (the answer as a
 * text artifact), `failed` (the error), `canceled` (interrupted) or
 * `input-required` (paused, waiting for approvals; a run.resumed after it is
 * `working` again).
 */
import { Role, TaskState, type Artifact, type Message, type Part, type Task, type TaskStatus } from "@a2a-js/sdk";
import { UnsupportedOperationError } from "@a2a-js/sdk/errors";
import type { ServerCallContext, TaskStore } from "@a2a-js/sdk/server";
import type { EventOf, RunEvent } from "../../events/types.js";
import { mayReach } from "../access.js";
import type { ServerContext } from "../runs-api.js";
import { callerOf } from "./caller.js";

/** The artifact that holds a run's answer. */
export const ANSWER_ARTIFACT = "answer";

/** An A2A text part. */
export function textPart(text: string): Part {
  return { content: { $case: "text", value: text }, mediaType: "text/plain", filename: "", metadata: {} };
}

/** A message of the agent in a task. */
export function agentMessage(taskId: string, contextId: string, text: string, messageId: string): Message {
  return { messageId, taskId, contextId, role: Role.ROLE_AGENT, parts: [textPart(text)], metadata: {}, extensions: [], referenceTaskIds: [] };
}

export function answerArtifact(answer: string): Artifact {
  return { artifactId: ANSWER_ARTIFACT, name: ANSWER_ARTIFACT, description: "The run's answer.", parts: [textPart(answer)], metadata: {}, extensions: [] };
}

/** What a paused run says it waits for, and how to answer. */
export function waitingText(finished: EventOf<"run.finished">): string {
  const calls = (finished.approvals ?? []).map((a) => `${a.tool} (call ${a.call_id})`).join(", ");
  return `waiting for approval of ${calls || "a tool call"}: answer "approve" or "deny" in this task (or a data part {"decision": "approve"})`;
}

/** The status a run.finished gives its task, with the message that says why. */
export function finishedStatus(taskId: string, contextId: string, finished: EventOf<"run.finished">): TaskStatus {
  const say = (text: string) => agentMessage(taskId, contextId, text, `${taskId}:${finished.seq}`);
  const timestamp = finished.ts;
  switch (finished.result_type) {
    case "answer":
      // The answer is the task's artifact, once: the status says no more than that the task is done.
      return { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp };
    case "paused":
      return { state: TaskState.TASK_STATE_INPUT_REQUIRED, message: say(waitingText(finished)), timestamp };
    case "blocked":
      // A guardrail refused the work (docs/guardrails.md): the agent declines the task.
      return { state: TaskState.TASK_STATE_REJECTED, message: say(finished.error ?? "blocked by a guardrail"), timestamp };
    case "error":
      // A cancelled run ends with the error ABORTED "interrupted" (src/errors.ts).
      return finished.error_code === "ABORTED"
        ? { state: TaskState.TASK_STATE_CANCELED, message: say(finished.error ?? "interrupted"), timestamp }
        : { state: TaskState.TASK_STATE_FAILED, message: say(finished.error ?? "the run failed"), timestamp };
  }
}

/** What a run.finished adds to its task's metadata: the run's usage and, when it had one, its budget statement. */
export function finishedMetadata(finished: EventOf<"run.finished">): Record<string, unknown> {
  return { usage: finished.usage, ...(finished.budget ? { budget: finished.budget } : {}) };
}

/** The task of a run, from its events; undefined when no run has that id. */
export function taskOfEvents(taskId: string, events: readonly RunEvent[]): Task | undefined {
  const started = events.find((e) => e.type === "run.started");
  if (started?.type !== "run.started") return undefined;
  const contextId = started.session_id ?? taskId;
  const last = events.findLast((e) => e.type === "run.finished" || e.type === "run.resumed");
  const finished = last?.type === "run.finished" ? last : undefined;
  const input: Message = { ...agentMessage(taskId, contextId, started.input, `${taskId}:input`), role: Role.ROLE_USER };
  return {
    id: taskId,
    contextId,
    status: finished
      ? finishedStatus(taskId, contextId, finished)
      : { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: last?.ts ?? started.ts },
    artifacts: finished?.result_type === "answer" ? [answerArtifact(finished.answer ?? "")] : [],
    history: [input],
    metadata: { agent: started.agent_id, ...(finished ? finishedMetadata(finished) : {}) },
  };
}

/**
 * The SDK's task store over the run store. The SDK loads a task and saves it
 * back for every update it tells a request (src/server/a2a/executor.ts): the
 * task a request saved is what that request loads next, so an update costs
 * the same whatever the run's length; any other request (GetTask, a new
 * message) reads the run. Nothing is kept past the request, since every
 * state the SDK would save is the run's own (a second copy of runs could only
 * drift from them).
 */
export class RunTaskStore implements TaskStore {
  /** The task each request last saved, by request. */
  private readonly saved = new WeakMap<ServerCallContext, Map<string, Task>>();

  constructor(private readonly ctx: ServerContext) {}

  /** The task of a run the call's caller may read (src/server/access.ts); someone else's is not found. */
  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const saved = this.saved.get(context)?.get(taskId);
    if (saved) return saved;
    if (!(await mayReach({ ...this.ctx, caller: callerOf(context) }, taskId, "read"))) return undefined;
    return taskOfEvents(taskId, await this.ctx.store.eventsOfTask(taskId));
  }

  /**
   * Keep the task for the request's next update. The answer's chunks already
   * went to the request's stream: the artifact keeps the last one only, and
   * the whole answer replaces it when the run has answered; a task that ended
   * without an answer has no answer artifact, as when read from the run.
   */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const answer = task.artifacts.find((a) => a.artifactId === ANSWER_ARTIFACT);
    if (answer && answer.parts.length > 1) answer.parts = answer.parts.slice(-1);
    const state = task.status?.state;
    if (answer && state !== TaskState.TASK_STATE_WORKING && state !== TaskState.TASK_STATE_SUBMITTED && state !== TaskState.TASK_STATE_COMPLETED)
      task.artifacts = task.artifacts.filter((a) => a !== answer);
    let tasks = this.saved.get(context);
    if (!tasks) this.saved.set(context, (tasks = new Map()));
    tasks.set(task.id, task);
  }

  async list(): Promise<never> {
    throw new UnsupportedOperationError("tasks are not listed over A2A: GET /v1/runs lists the runs");
  }
}
