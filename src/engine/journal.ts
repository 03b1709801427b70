/**
 * The run's journal (docs/design/journal.md): every model reply and every
 * tool call's start and result, committed to the store at the engine's two
 * call points before the run moves on, under keys that name them within the
 * run whatever ids the models and the clock produced:
 *
 *   step key   `0` for the run's first step; a child step is its caller's key,
 *              `.`, and the child's ordinal among the caller's calls (`0.2`)
 *   model call `<step key>/m<k>`: the reply to model call k of that step
 *   tool call  `<step key>/t<n>`: the n-th tool call of that step
 *
 * Ordinals are taken when a call starts, in the order the step makes its
 * calls, so the same replies lead to the same keys: a later resume reads
 * "the reply to model call k of step s" here instead of asking the model.
 */
import * as crypto from "node:crypto";
import { redactWithJson } from "../redact.js";
import type { ChatMessage, ChatResponse, ToolCallRequest, ToolSpec } from "../models/types.js";
import type { Replay, RunRecord } from "./replay.js";
import type { ToolOutcome } from "../tools/types.js";
import type { JournalEntry, RunWriter } from "../store/runs.js";

/** A run's journal. Writes never throw into the run: a failing store is reported once. */
export class Journal {
  private warned = false;

  constructor(
    private readonly task_id: string,
    /** The run's writer, shared with its events (docs/design/journal.md#when-it-is-written); none when tracing is off. */
    private readonly sink: RunWriter | undefined,
    private readonly secrets: readonly string[],
    private readonly now: () => Date,
    /** The stored run this one goes over again (resume, replay). */
    readonly replay?: Replay,
  ) {}

  /** Whether anything reads what is written or stored: else fingerprints are not worth making. */
  get active(): boolean {
    return this.sink !== undefined || this.replay !== undefined;
  }

  run(record: RunRecord): void {
    this.write("run", "run", record);
  }

  stepStarted(key: string, step_id: string, agent: string): void {
    this.write(key, "step", { step_id, agent });
  }

  value(key: string, name: string, value: unknown): void {
    this.write(key, "value", { name, value });
  }

  /**
   * Settles once everything written so far (and the run's events) is
   * durable. The engine awaits it right before the run acts outside the
   * process: a model request, a write tool's body.
   */
  commit(): void | Promise<void> {
    return this.sink?.durable();
  }

  modelReply(key: string, reply: ChatResponse, request: RequestFingerprint | undefined): void {
    this.write(key, "model.reply", request ? Object.assign({}, reply, { request }) : reply);
  }

  toolStarted(key: string, call: ToolCallRequest, args: unknown): void {
    this.write(key, "tool.started", { call_id: call.id, tool: call.name, arguments: args });
  }

  toolResult(key: string, outcome: ToolOutcome): void {
    this.write(key, "tool.result", outcome);
  }

  private write(key: string, kind: JournalEntry["kind"], value: unknown): void {
    if (!this.sink) return;
    try {
      const { json } = redactWithJson(value, this.secrets);
      this.sink.append([], [{ task_id: this.task_id, key, kind, ts: this.now().toISOString(), json }]);
    } catch (err) {
      if (!this.warned) process.emitWarning(`journal of ${this.task_id}: ${err instanceof Error ? err.message : String(err)}`, "JournalWarning");
      this.warned = true;
    }
  }
}

/** The keys of one step: its own, its model and tool calls', its children's. */
export class StepKeys {
  private models = 0;
  private tools = 0;
  private children = 0;
  private values = 0;

  constructor(readonly key: string) {}

  nextModel(): string {
    return `${this.key}/m${this.models++}`;
  }

  nextTool(): string {
    return `${this.key}/t${this.tools++}`;
  }

  nextChild(): string {
    return `${this.key}.${this.children++}`;
  }

  nextValue(): string {
    return `${this.key}/v${this.values++}`;
  }
}

/**
 * What a model request was, in short: each message's role and hash (so
 * `runtime diff` can say which one differs) and a hash of the whole request. A resume reuses
 * a stored reply only for a request with the same hash.
 */
export interface RequestFingerprint {
  hash: string;
  messages: string[];
}

const messageHashes = new WeakMap<object, string>();
const toolHashes = new WeakMap<object, string>();

export function fingerprint(messages: readonly ChatMessage[], tools?: readonly ToolSpec[], responseFormat?: unknown): RequestFingerprint {
  const hashes = messages.map((m) => `${m.role}:${cachedHash(messageHashes, m, () => JSON.stringify(m))}`);
  let whole = hashes.join(",");
  if (tools?.length) whole += `|tools:${cachedHash(toolHashes, tools, () => JSON.stringify(tools))}`;
  if (responseFormat !== undefined) whole += `|format:${JSON.stringify(responseFormat)}`;
  return { hash: sha256(whole).slice(0, 32), messages: hashes };
}

/** SHA-256 in hex: one call where Node has `crypto.hash` (20.12 and later), a Hash object before; the same digest. */
const sha256 = (text: string): string =>
  typeof crypto.hash === "function" ? crypto.hash("sha256", text) : crypto.createHash("sha256").update(text).digest("hex");

function cachedHash(cache: WeakMap<object, string>, value: object, text: () => string): string {
  let hash = cache.get(value);
  if (hash === undefined) {
    hash = sha256(text()).slice(0, 16);
    cache.set(value, hash);
  }
  return hash;
}
