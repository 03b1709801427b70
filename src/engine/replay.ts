/**
 * A stored run read back from its journal (docs/durable-runs.md): the
 * replies, tool outcomes and values a resumed or replayed run reuses instead
 * of asking for them again, looked up by the keys of src/engine/journal.ts.
 *
 * A reply is reused only for the same request (its hash is stored with it),
 * a tool outcome only for the same tool and arguments: when a step asks for
 * something else than it did (a changed prompt, a larger budget that lets a
 * call through that failed before), the step has diverged and goes on live
 * from there.
 */
import { RuntimeError } from "../errors.js";
import { addUsage } from "../events/usage.js";
import { ZERO_USAGE, type Usage } from "../events/types.js";
import type { ChatResponse } from "../models/types.js";
import type { AttachmentRef } from "../models/attachment.js";
import type { Exchange } from "../store/conversations.js";
import type { ApprovalRecord, JournalEntry } from "../store/runs.js";
import type { RecordedCall } from "../tools/toolbox.js";
import type { ToolOutcome } from "../tools/types.js";

/** How a run was started: what `resume` needs to start it again. */
export interface RunRecord {
  input: string;
  agent: string;
  session_id: string;
  /** Absolute path of the team file, when the run came from one. */
  team_file?: string;
  /** The caller named the session: the run reads and extends its conversation (docs/sessions.md). */
  in_session?: boolean;
  /** The conversation the caller gave with the input (`RunOptions.history`). */
  history?: Exchange[];
  /** The files the run was given, by hash: their bytes are in the run's store (docs/attachments.md). */
  attachments?: AttachmentRef[];
}

/**
 * `resume`: reused calls are quiet (their events are in the store already)
 * and a step goes on live after its last recorded call. `offline`: reused
 * calls are reported as if they happened, and a call the journal does not
 * hold is an error (runtime replay runs nothing).
 */
export type ReplayMode = "resume" | "offline";

/** A model reply as the journal stores it: the reply and the request it answered. */
export interface StoredReply extends ChatResponse {
  request?: { hash: string; messages: string[] };
}

export class Replay {
  readonly run: RunRecord | undefined;
  /** Usage of the replies reused so far (the run's total includes it). */
  usage: Usage = ZERO_USAGE;
  private readonly rows = new Map<string, { kind: JournalEntry["kind"]; value: unknown }>();
  /** Recorded calls not yet reached, per step key. */
  private readonly remaining = new Map<string, number>();
  private readonly diverged = new Set<string>();

  constructor(
    readonly mode: ReplayMode,
    entries: readonly JournalEntry[],
    /** Decisions on calls that waited for approval, by key. */
    readonly decisions: ReadonlyMap<string, ApprovalRecord> = new Map(),
  ) {
    let run: RunRecord | undefined;
    for (const entry of entries) {
      const value: unknown = JSON.parse(entry.json);
      if (entry.kind === "run") {
        run = value as RunRecord;
        continue;
      }
      this.rows.set(entry.key, { kind: entry.kind, value });
      if (entry.kind !== "step") {
        const step = stepOf(entry.key);
        this.remaining.set(step, (this.remaining.get(step) ?? 0) + 1);
      }
    }
    this.run = run;
  }

  /** The step_id a step had, so a resumed step reports under the same id. */
  stepId(stepKey: string): string | undefined {
    const row = this.rows.get(stepKey);
    return row?.kind === "step" ? (row.value as { step_id: string }).step_id : undefined;
  }

  /**
   * Whether a step is still going over what it did before (resume only): its
   * events are then in the store already and are not emitted again.
   */
  replaying(stepKey: string): boolean {
    return this.mode === "resume" && !this.diverged.has(stepKey) && (this.remaining.get(stepKey) ?? 0) > 0;
  }

  /** The stored reply to model call `key`, if it answered the same request. */
  modelReply(key: string, requestHash: string): ChatResponse | undefined {
    const step = stepOf(key);
    if (this.diverged.has(step)) return undefined;
    const row = this.take(key, "model.reply");
    if (!row) return this.miss(key, "no reply is recorded for this model call");
    const { request, ...reply } = row as StoredReply;
    if (request?.hash !== requestHash) {
      this.diverged.add(step);
      return this.miss(key, "the model call's request differs from the recorded one");
    }
    this.usage = addUsage(this.usage, reply.usage);
    return reply;
  }

  /** What the journal holds for tool call `key`, if it is the same call (tool and arguments). */
  toolCall(key: string, tool: string, args: unknown): RecordedCall | undefined {
    const step = stepOf(key);
    if (this.diverged.has(step)) return undefined;
    const row = this.rows.get(key);
    if (row?.kind !== "tool.result" && row?.kind !== "tool.started") return this.miss(key, "no tool call is recorded here");
    this.take(key, row.kind);
    const recorded = row.value as { tool: string; arguments: unknown } & Partial<ToolOutcome>;
    if (recorded.tool !== tool || JSON.stringify(recorded.arguments) !== JSON.stringify(args)) {
      this.diverged.add(step);
      return this.miss(key, `the tool call differs from the recorded one (${recorded.tool})`);
    }
    return row.kind === "tool.result" ? { kind: "result", outcome: row.value as ToolOutcome } : { kind: "started" };
  }

  /** A value the step read from outside the run, as it read it then. */
  value(key: string, name: string): { value: unknown } | undefined {
    const step = stepOf(key);
    if (this.diverged.has(step)) return undefined;
    const row = this.take(key, "value") as { name: string; value: unknown } | undefined;
    if (!row || row.name !== name) return undefined;
    return { value: row.value };
  }

  private take(key: string, kind: JournalEntry["kind"]): unknown {
    const row = this.rows.get(key);
    if (row?.kind !== kind) return undefined;
    this.rows.delete(key);
    const step = stepOf(key);
    this.remaining.set(step, (this.remaining.get(step) ?? 1) - 1);
    return row.value;
  }

  private miss(key: string, why: string): undefined {
    if (this.mode === "offline") throw new RuntimeError("REPLAY_DIVERGED", `replay diverged at ${key}: ${why}`);
    return undefined;
  }
}

/** The step a call key belongs to: `0.1/m2` → `0.1`. */
export function stepOf(key: string): string {
  const slash = key.lastIndexOf("/");
  return slash < 0 ? key : key.slice(0, slash);
}
