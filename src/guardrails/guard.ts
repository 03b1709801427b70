/**
 * The guardrails of one agent step (docs/guardrails.md): each check that
 * applies, in the file's order, with `guardrail.passed` or
 * `guardrail.tripped` for each. `redact` masks what matched and goes on;
 * `retry` hands the reason back (its caller gives it to the model), at most
 * `max_retries` times in the step, then blocks; `block` marks the run
 * blocked and throws, so no model or tool call starts after it.
 */
import type { Guardrail } from "../config/types.js";
import { RuntimeError } from "../errors.js";
import type { GuardrailOn, RunEventBody } from "../events/types.js";
import type { CheckPorts, Subject, Trip } from "./checks.js";

/** What a checked text may go on as: itself or masked; or the reason to give back to the model. */
export type Verdict = { ok: true; text: string } | { ok: false; reason: string };

/** The guardrail that ended a run, as `run.finished` names it. */
export interface Blocked {
  name: string;
  on: GuardrailOn;
  reason: string;
}

export interface GuardPorts extends CheckPorts {
  agent: string;
  emit(body: RunEventBody): void;
  /** Marks the run blocked (the first block wins). */
  block(blocked: Blocked): void;
}

const MASK = "[REDACTED]";

export class StepGuards {
  private readonly retries = new Map<string, number>();

  constructor(
    private readonly guardrails: readonly Guardrail[],
    private readonly ports: GuardPorts,
  ) {}

  /** Whether any guardrail checks `on` (for `tool`): with none, nothing is asked or emitted. */
  applies(on: GuardrailOn, tool?: string): boolean {
    return this.guardrails.some((g) => matches(g, on, tool));
  }

  /**
   * Check `text`; throws RuntimeError BLOCKED when a guardrail blocks it.
   * `retry: false`: the caller cannot give a reason back, so a retry blocks.
   */
  async check(on: GuardrailOn, text: string, tool?: string, options: { retry?: boolean } = {}): Promise<Verdict> {
    let current = text;
    for (const g of this.guardrails) {
      if (!matches(g, on, tool)) continue;
      const subject: Subject = { on, text: current, agent: this.ports.agent, ...(tool !== undefined ? { tool } : {}) };
      // The checks' module (and the programs and schemas it may need) loads with the first guardrail that runs.
      const { runCheck } = await import("./checks.js");
      const trip = await runCheck(g.check, subject, this.ports);
      const where = { name: g.name, on, ...(tool !== undefined ? { tool } : {}) };
      if (!trip) {
        this.ports.emit({ type: "guardrail.passed", ...where });
        continue;
      }
      if (g.action === "redact" && trip.spans) {
        this.ports.emit({ type: "guardrail.tripped", ...where, action: "redact", reason: trip.reason });
        current = mask(current, trip.spans);
        continue;
      }
      if (g.action === "retry" && options.retry !== false) {
        const used = this.retries.get(g.name) ?? 0;
        if (used < g.max_retries) {
          this.retries.set(g.name, used + 1);
          this.ports.emit({ type: "guardrail.tripped", ...where, action: "retry", reason: trip.reason });
          return { ok: false, reason: `guardrail '${g.name}': ${trip.reason}` };
        }
        return this.blocked(g, where, { reason: `${trip.reason} (still, after ${g.max_retries} ${g.max_retries === 1 ? "retry" : "retries"})` });
      }
      return this.blocked(g, where, trip);
    }
    return { ok: true, text: current };
  }

  private blocked(g: Guardrail, where: { name: string; on: GuardrailOn; tool?: string }, trip: Trip): never {
    this.ports.emit({ type: "guardrail.tripped", ...where, action: "block", reason: trip.reason });
    this.ports.block({ name: g.name, on: where.on, reason: trip.reason });
    throw new RuntimeError("BLOCKED", `blocked by guardrail '${g.name}' (${where.on}${where.tool ? ` of ${where.tool}` : ""}): ${trip.reason}`);
  }
}

function matches(g: Guardrail, on: GuardrailOn, tool: string | undefined): boolean {
  return g.on === on && (g.tools === undefined || (tool !== undefined && g.tools.includes(tool)));
}

/** `text` with each span (merged where they overlap) replaced by the mask. */
function mask(text: string, spans: ReadonlyArray<[number, number]>): string {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let out = "";
  let at = 0;
  for (const [start, end] of sorted) {
    if (end <= at) continue;
    out += text.slice(at, Math.max(at, start)) + (start >= at ? MASK : "");
    at = end;
  }
  return out + text.slice(at);
}
