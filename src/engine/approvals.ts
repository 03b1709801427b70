/**
 * Tool calls waiting for a person (docs/durable-runs.md#approvals): a tool
 * with `approval: required`, an agent's `approval:` list, or a write that
 * was in flight when the run stopped. A decision already recorded for the
 * call (`runtime approve`, the server) is used; else the run's approver is
 * asked (the terminal, when `exec` has one); else the run pauses: no new
 * call starts, the calls in flight finish, and the run ends `paused` with
 * the calls it waits on.
 */
import { RuntimeError } from "../errors.js";
import type { ApprovalDecision, EventScope, PendingApproval, RunEventBody } from "../events/types.js";
import type { ApprovalRequest } from "../tools/toolbox.js";

export interface Decision {
  decision: ApprovalDecision;
  reason?: string;
}

/** Asks a person now (a terminal prompt): the run waits for the answer. */
export type Approver = (request: { approval_id: string; tool: string; call_id: string; arguments: unknown; in_doubt: boolean }) => Promise<Decision>;

export class Approvals {
  /** The calls the run paused for, in the order they asked. */
  readonly pending: PendingApproval[] = [];

  constructor(
    private readonly recorded: ReadonlyMap<string, Decision>,
    /** Stores a decision the approver gave, so a resume finds it. */
    private readonly record: (key: string, decision: Decision) => void,
    private readonly approver?: Approver,
  ) {}

  get paused(): boolean {
    return this.pending.length > 0;
  }

  /** Throws when the run is pausing: no new model or tool call starts. */
  halt(): void {
    if (this.paused) throw new RuntimeError("PAUSED", `paused: waiting for approval of ${this.pending.map((p) => p.tool).join(", ")}`);
  }

  async decide(request: ApprovalRequest, emit: (body: RunEventBody, scope?: EventScope) => void): Promise<Decision> {
    const { key, call, args, in_doubt } = request;
    const ids = { approval_id: key, tool: call.name, call_id: call.id };
    const recorded = this.recorded.get(key);
    if (recorded) {
      emit({ type: "approval.decided", ...ids, ...recorded });
      return recorded;
    }
    emit({ type: "approval.requested", ...ids, arguments: args, ...(in_doubt ? { in_doubt } : {}) });
    if (this.approver && !this.paused) {
      const decision = await this.approver({ ...ids, arguments: args, in_doubt });
      this.record(key, decision);
      emit({ type: "approval.decided", ...ids, ...decision });
      return decision;
    }
    this.pending.push({ ...ids, ...(in_doubt ? { in_doubt } : {}) });
    throw new RuntimeError("PAUSED", `paused: ${call.name} (${key}) waits for approval`);
  }
}
