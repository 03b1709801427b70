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
import { mask } from "./mask.js";

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
    const verdict = await this.checkAll(on, [{ text }], tool, options);
    return verdict.ok ? { ok: true, text: verdict.texts[0] ?? text } : verdict;
  }

  /**
   * Check several texts as one subject (an input and the conversation's
   * earlier turns): each guardrail looks at each text, and emits one event;
   * a trip names the text it found (`where`). Throws RuntimeError BLOCKED
   * when a guardrail blocks.
   */
  async checkAll(
    on: GuardrailOn,
    texts: ReadonlyArray<{ text: string; where?: string }>,
    tool?: string,
    options: { retry?: boolean } = {},
  ): Promise<{ ok: true; texts: string[] } | { ok: false; reason: string }> {
    const current = texts.map((t) => t.text);
    for (const g of this.guardrails) {
      if (!matches(g, on, tool)) continue;
      // The checks' module (and the programs and schemas it may need) loads with the first guardrail that runs.
      const { runCheck } = await import("./checks.js");
      const where = { name: g.name, on, ...(tool !== undefined ? { tool } : {}) };
      const trips: Array<{ index: number; trip: Trip }> = [];
      for (const [index, text] of current.entries()) {
        const subject: Subject = { on, text, agent: this.ports.agent, ...(tool !== undefined ? { tool } : {}) };
        const trip = await runCheck(g.check, subject, this.ports);
        if (trip) trips.push({ index, trip });
        // A guardrail that does not mask stops at the first text it objects to.
        if (trip && !(g.action === "redact" && trip.spans)) break;
      }
      const first = trips[0];
      if (!first) {
        this.ports.emit({ type: "guardrail.passed", ...where });
        continue;
      }
      const said = texts[first.index]?.where;
      const trip: Trip = { ...first.trip, reason: said ? `${first.trip.reason} (in ${said})` : first.trip.reason };
      if (g.action === "redact" && first.trip.spans) {
        this.ports.emit({ type: "guardrail.tripped", ...where, action: "redact", reason: trip.reason });
        for (const { index, trip: each } of trips) current[index] = mask(current[index]!, each.spans ?? []);
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
    return { ok: true, texts: current };
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
