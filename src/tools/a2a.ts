/**
 * A remote A2A agent as a tool (docs/protocols.md#a2a-agents-as-tools), through
 * the official SDK's client: the agent's card is read once per process (per
 * URL and headers), each call sends the model's `message` as a new task,
 * streamed when the card says the agent streams. The remote status updates
 * become `tool.progress` events, the text of its artifacts (else of its last
 * message) is the result, and a remote failure is the call's error. When the
 * call ends early (its timeout, the run cancelled), the remote task is
 * cancelled too.
 */
import { Role, TaskState, type Message, type Part, type SendMessageRequest, type StreamResponse, type Task } from "@a2a-js/sdk";
import { ClientFactory, ClientFactoryOptions, DefaultAgentCardResolver, JsonRpcTransportFactory, RestTransportFactory, type Client } from "@a2a-js/sdk/client";
import { randomUUID } from "node:crypto";
import type { A2AToolConfig } from "../config/types.js";
import { describeError, RuntimeError } from "../errors.js";
import { declaredTool } from "./declared.js";
import type { Tool, ToolContext } from "./types.js";

export function a2aTool(config: A2AToolConfig): Tool {
  const tool = declaredTool(config, (args, ctx) => ask(config, String(args["message"] ?? ""), ctx));
  // Without a description of the team's own, the model still learns what the tool is for.
  return tool.description ? tool : { ...tool, description: `Ask the agent at ${config.url} (A2A): send one complete message, get its answer.` };
}

/** Clients by URL and headers, made from the agent's card the first time a call needs one. */
const clients = new Map<string, Promise<Client>>();

function clientOf(config: A2AToolConfig): Promise<Client> {
  const key = JSON.stringify([config.url, config.headers]);
  let client = clients.get(key);
  if (!client) {
    const fetchImpl = withHeaders(config.headers, config.timeout_ms);
    const factory = new ClientFactory(
      ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
        transports: [new JsonRpcTransportFactory({ fetchImpl }), new RestTransportFactory({ fetchImpl })],
        cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      }),
    );
    client = factory.createFromUrl(config.url);
    // A card that could not be read is read again by the next call.
    client.catch(() => clients.delete(key));
    clients.set(key, client);
  }
  return client;
}

/**
 * `fetch` with the tool's headers (and `timeoutMs` when the SDK gives no signal). An HTTP error is told by its status and
 * the body's own message: an A2A server answers JSON-RPC errors with 200, so
 * a 401 or a 404 comes from around it (its token check, a proxy), in a body
 * the SDK cannot read.
 */
function withHeaders(headers: Record<string, string>, timeoutMs: number): typeof fetch {
  return async (input, init = {}) => {
    const merged = new Headers(init.headers);
    for (const [name, value] of Object.entries(headers)) merged.set(name, value);
    const url = new URL(input instanceof Request ? input.url : String(input));
    // The card is read without a signal: its own time limit keeps a silent server from holding the cache.
    const signal = init.signal ?? AbortSignal.timeout(timeoutMs);
    const response = await fetch(input, { ...init, headers: merged, signal }).catch((err: unknown) => {
      // undici says "fetch failed" and puts why in the cause (ECONNREFUSED, a DNS failure).
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause : undefined;
      if (signal.aborted || !cause) throw err;
      throw new RuntimeError("TOOL_FAILED", `cannot reach ${url.host}: ${"code" in cause && cause.code ? String(cause.code) : describeError(cause)}`);
    });
    if (response.ok) return response;
    const body = await response.text().catch(() => "");
    let said = body;
    try {
      const parsed = JSON.parse(body) as { error?: unknown };
      if (typeof parsed.error === "string") said = parsed.error;
      else if (typeof parsed.error === "object" && parsed.error !== null && "message" in parsed.error) said = String(parsed.error.message);
    } catch {
      // Not JSON: the text as it is.
    }
    throw new RuntimeError("TOOL_FAILED", `${url.pathname} answered ${response.status}${said ? `: ${oneLine(said).slice(0, 300)}` : ""}`);
  };
}

async function ask(config: A2AToolConfig, text: string, ctx: ToolContext): Promise<string> {
  const signal = ctx.signal;
  let taskId: string | undefined;
  let client: Client | undefined;
  try {
    client = await untilAborted(clientOf(config), signal);
    const request = newTask(text);
    const streams = (await client.getAgentCard()).capabilities?.streaming === true;
    if (!streams) {
      const sent = await client.sendMessage(request, { signal });
      if ("messageId" in sent) return textOf(sent.parts);
      taskId = sent.id;
      return resultOf(sent);
    }
    const outcome = new Outcome();
    for await (const response of client.sendMessageStream(request, { signal })) {
      taskId ??= taskIdOf(response);
      const progress = outcome.add(response);
      if (progress) ctx.emit({ type: "tool.progress", tool: config.name, call_id: ctx.call_id, message: progress });
    }
    return outcome.result();
  } catch (err) {
    if (signal.aborted) {
      if (client && taskId) void client.cancelTask({ tenant: "", id: taskId, metadata: {} }, { signal: AbortSignal.timeout(5_000) }).catch(() => {});
      throw signal.reason instanceof Error ? signal.reason : new RuntimeError("ABORTED", "aborted");
    }
    throw new RuntimeError(err instanceof RuntimeError ? err.code : "TOOL_FAILED", `A2A agent at ${config.url}: ${oneLine(describeError(err))}`);
  }
}

/** What a stream told so far: the task's artifacts by id, its last status. */
class Outcome {
  private readonly artifacts = new Map<string, string>();
  private state: TaskState | undefined;
  private said = "";
  private message: string | undefined;

  /** Take one answer of the stream; returns what to tell as progress, if anything. */
  add(response: StreamResponse): string | undefined {
    const payload = response.payload;
    switch (payload?.$case) {
      case "message":
        this.message = textOf(payload.value.parts);
        return undefined;
      case "task":
        for (const a of payload.value.artifacts) this.artifacts.set(a.artifactId, textOf(a.parts));
        this.status(payload.value.status?.state, payload.value.status?.message);
        return undefined;
      case "artifactUpdate": {
        const artifact = payload.value.artifact;
        if (!artifact) return undefined;
        const before = payload.value.append ? (this.artifacts.get(artifact.artifactId) ?? "") : "";
        this.artifacts.set(artifact.artifactId, before + textOf(artifact.parts));
        return undefined;
      }
      case "statusUpdate": {
        this.status(payload.value.status?.state, payload.value.status?.message);
        if (payload.value.status?.state !== TaskState.TASK_STATE_WORKING) return undefined;
        return this.said || undefined;
      }
      default:
        return undefined;
    }
  }

  private status(state: TaskState | undefined, message: Message | undefined): void {
    if (state !== undefined) this.state = state;
    this.said = message ? textOf(message.parts) : "";
  }

  result(): string {
    if (this.message !== undefined && this.state === undefined) return this.message;
    return settled(this.state, [...this.artifacts.values()].join("\n"), this.said);
  }
}

/** The result of a task that has ended, or the error it ended with. */
function resultOf(task: Task): string {
  return settled(task.status?.state, task.artifacts.map((a) => textOf(a.parts)).join("\n"), task.status?.message ? textOf(task.status.message.parts) : "");
}

function settled(state: TaskState | undefined, artifacts: string, said: string): string {
  switch (state) {
    case TaskState.TASK_STATE_COMPLETED:
      return artifacts || said;
    case TaskState.TASK_STATE_FAILED:
    case TaskState.TASK_STATE_REJECTED:
      throw new RuntimeError("TOOL_FAILED", `the remote agent failed: ${oneLine(said) || "no reason given"}`);
    case TaskState.TASK_STATE_CANCELED:
      throw new RuntimeError("TOOL_FAILED", `the remote agent's task was cancelled${said ? `: ${oneLine(said)}` : ""}`);
    case TaskState.TASK_STATE_INPUT_REQUIRED:
    case TaskState.TASK_STATE_AUTH_REQUIRED:
      throw new RuntimeError("TOOL_FAILED", `the remote agent waits for input this tool cannot give: ${oneLine(said) || "no reason given"}`);
    default:
      throw new RuntimeError("TOOL_FAILED", "the remote agent's answer ended before its task did");
  }
}

function newTask(text: string): SendMessageRequest {
  const message: Message = {
    messageId: randomUUID(),
    contextId: "",
    taskId: "",
    role: Role.ROLE_USER,
    parts: [{ content: { $case: "text", value: text }, mediaType: "text/plain", filename: "", metadata: {} }],
    metadata: {},
    extensions: [],
    referenceTaskIds: [],
  };
  return { tenant: "", message, configuration: undefined, metadata: {} };
}

function taskIdOf(response: StreamResponse): string | undefined {
  const p = response.payload;
  if (p?.$case === "task") return p.value.id;
  if (p?.$case === "statusUpdate" || p?.$case === "artifactUpdate") return p.value.taskId;
  return undefined;
}

function textOf(parts: readonly Part[]): string {
  return parts.flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : [])).join("\n");
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** `promise`, or a rejection as soon as `signal` aborts (the card's fetch takes no signal). */
function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
