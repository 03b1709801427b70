/**
 * A run's reply as the OpenAI-compatible endpoints give it: the run is
 * launched as every protocol's is (`launchRun`) and followed through the
 * store (src/store/follow.ts) to its run.finished. A run that pauses for an
 * approval answers with a note naming its task_id, the tools waiting and how
 * to approve them (docs/protocols.md#openai-compatible).
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { AnswerText } from "../../kinds/answer-text.js";
import type { RunError } from "../../errors.js";
import { ZERO_USAGE, type PendingApproval, type Usage } from "../../events/types.js";
import { follow } from "../../store/follow.js";
import { launchRun, type ApiContext, type LaunchRequest, type LaunchedRun } from "../runs-api.js";
import { wasDropped } from "../sse.js";

/** How a run ended, for a reply. */
export interface RunReply {
  status: "answer" | "paused" | "blocked" | "error";
  /** The answer, the note of a paused run, or what blocked it (docs/guardrails.md). */
  text: string;
  usage: Usage;
  /** A failed run's code (src/errors.ts) and message. */
  error?: RunError;
}

/**
 * Launch a run for a request and give the run's reply once it is known.
 * The request's closing (the client went away) cancels the run, as on
 * `POST /v1/runs`; `started` is called with the task_id before the run is
 * followed (to send headers). With `onText`, the answer's text is given to
 * it as it is written, the rest of it when the run ends
 * (src/kinds/answer-text.ts); the run is read on once it has resolved (the
 * client took the frame). The server's `close()` waits for the reply.
 */
export async function replyOf(
  ctx: ApiContext,
  req: IncomingMessage,
  res: ServerResponse,
  body: LaunchRequest,
  started: (taskId: string) => void,
  onText?: (text: string) => Promise<unknown> | void,
): Promise<{ task_id: string; reply: RunReply | undefined }> {
  const run = await launchRun(ctx, body);
  const gone = new AbortController();
  res.once("close", () => {
    if (res.writableFinished) return;
    gone.abort();
    // A client dropped for reading nothing did not leave: its run finishes and is stored (docs/server.md#slow-readers).
    if (!wasDropped(res)) run.cancel?.();
  });
  // A client that went away while the run was being launched (the request itself ends once its body is read).
  if (req.socket.destroyed) {
    gone.abort();
    run.cancel?.();
  }
  started(run.task_id);
  const following = followToEnd(ctx, run, gone.signal, onText);
  const tracked = following.then(() => {});
  ctx.streams.add(tracked);
  void tracked.finally(() => ctx.streams.delete(tracked));
  return { task_id: run.task_id, reply: await following };
}

async function followToEnd(
  ctx: ApiContext,
  run: LaunchedRun,
  signal: AbortSignal,
  onText?: (text: string) => Promise<unknown> | void,
): Promise<RunReply | undefined> {
  const waiting: PendingApproval[] = [];
  const answer = onText ? new AnswerText(ctx.team) : undefined;
  try {
    for await (const { event } of follow(ctx.store, run.task_id, 0, { more: run.more, signal })) {
      if (event.type === "approval.requested") waiting.push(event);
      if (event.type !== "run.finished") {
        const text = answer ? await answer.feed(event) : "";
        if (text) await onText?.(text);
        continue;
      }
      const usage = event.usage ?? ZERO_USAGE;
      if (event.result_type === "answer") {
        const text = event.answer ?? "";
        const rest = answer?.rest(text);
        if (rest) await onText?.(rest);
        return { status: "answer", text, usage };
      }
      if (event.result_type === "paused") return { status: "paused", text: pausedNote(run.task_id, event.approvals ?? waiting), usage };
      if (event.result_type === "blocked") return { status: "blocked", text: event.error ?? "blocked by a guardrail", usage };
      const message = event.error ?? "the run failed";
      return { status: "error", text: "", usage, error: { code: event.error_code ?? "INTERNAL", message: `run ${run.task_id} failed: ${message}` } };
    }
  } catch (err) {
    if (signal.aborted) return undefined;
    return { status: "error", text: "", usage: ZERO_USAGE, error: { code: "STORE", message: `cannot follow run ${run.task_id}: ${String(err)}` } };
  }
  if (signal.aborted) return undefined;
  return { status: "error", text: "", usage: ZERO_USAGE, error: { code: "STORE", message: `run ${run.task_id} ended without its run.finished` } };
}

/** What a client is told of a run waiting for approvals: which, and the two ways to decide. */
export function pausedNote(taskId: string, approvals: readonly PendingApproval[]): string {
  const tools = [...new Set(approvals.map((a) => a.tool))].join(", ") || "a tool call";
  const ids = approvals.map((a) => a.approval_id).join(", ");
  const id = encodeURIComponent(taskId);
  return (
    `Run ${taskId} is waiting for approval of ${tools}${ids ? ` (approval_id ${ids})` : ""}. ` +
    `Approve or deny with POST /v1/runs/${id}/approvals {"decision": "approve"} (or "deny"), or on this server's page at /?task=${id}; ` +
    `the run then goes on, and GET /v1/runs/${id}/events follows it to its answer.`
  );
}
