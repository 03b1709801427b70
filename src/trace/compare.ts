/**
 * Where two runs part (docs/durable-runs.md#replay-and-diff): `compareEvents`
 * for `runtime replay` (a stored run against its offline replay), and
 * `diffJournals` for `runtime diff` (two runs of a team, call by call).
 */
import type { RunEvent } from "../events/types.js";
import type { JournalEntry } from "../store/runs.js";

/** The first place two runs differ, or nothing when they do not. */
export interface Divergence {
  /** Where: a journal key (`0.1/m2`) or the agent and position of an event. */
  at: string;
  what: string;
  expected?: unknown;
  got?: unknown;
}

/** Fields that differ between any two runs (time, ids of the moment) and events a replay cannot repeat. */
const VOLATILE = new Set(["seq", "ts", "task_id", "trace_id", "duration_ms"]);
/**
 * Streamed text is not journalled; the Plan Tool's own events come from its
 * store, which a replay does not touch; decisions are not asked for again.
 */
const UNREPEATABLE = new Set(["llm.delta", "task.status", "run.resumed", "approval.requested", "approval.decided"]);

/**
 * Compare a stored run's events with a replay's, step by step (the steps of
 * a replay keep their stored step_ids; parallel steps may interleave
 * differently, so each step's events are compared in order, not the whole
 * stream).
 */
export function compareEvents(stored: readonly RunEvent[], replayed: readonly RunEvent[]): Divergence | undefined {
  const a = byStep(stored);
  const b = byStep(replayed);
  for (const [step, events] of a) {
    const other = b.get(step) ?? [];
    for (let i = 0; i < Math.max(events.length, other.length); i++) {
      const x = events[i];
      const y = other[i];
      const where = `${(x ?? y)?.agent_id ?? "?"} step ${step}, event ${i + 1}`;
      if (!x || !y) return { at: where, what: x ? `the replay has no ${x.type} here` : `the replay has an extra ${y?.type}`, expected: x, got: y };
      const field = firstDifference(normal(x), normal(y));
      if (field !== undefined) return { at: where, what: `${x.type}: ${field.path} differs`, expected: field.a, got: field.b };
    }
  }
  for (const [step, events] of b) {
    if (!a.has(step)) return { at: `${events[0]?.agent_id ?? "?"} step ${step}`, what: "the replay has a step the run did not have", got: events[0] };
  }
  return undefined;
}

function byStep(events: readonly RunEvent[]): Map<string, RunEvent[]> {
  const groups = new Map<string, RunEvent[]>();
  for (const e of events) {
    // A request a kill left unanswered is asked again once resumed: the run made it once.
    if (e.type === "run.resumed") for (const group of groups.values()) if (group.at(-1)?.type === "llm.request") group.pop();
    if (UNREPEATABLE.has(e.type)) continue;
    const step = e.step_id ?? "run";
    let group = groups.get(step);
    if (!group) groups.set(step, (group = []));
    group.push(e);
  }
  // The calls of one reply run at once and may end in any order.
  for (const group of groups.values()) {
    for (let i = 0; i < group.length; i++) {
      let j = i;
      while (group[j]?.type === "tool.finished") j++;
      if (j - i > 1) group.splice(i, j - i, ...group.slice(i, j).sort((x, y) => callId(x).localeCompare(callId(y))));
      i = j;
    }
  }
  return groups;
}

function callId(e: RunEvent): string {
  return e.type === "tool.finished" ? e.call_id : "";
}

function normal(event: RunEvent): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(event)) if (!VOLATILE.has(k)) out[k] = v;
  return out;
}

function firstDifference(a: unknown, b: unknown, path = ""): { path: string; a: unknown; b: unknown } | undefined {
  if (a === b) return undefined;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    return { path: path || "(value)", a, b };
  }
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const key of keys) {
    if (VOLATILE.has(key)) continue;
    const found = firstDifference((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], path ? `${path}.${key}` : key);
    if (found) return found;
  }
  return undefined;
}

interface Row {
  key: string;
  kind: JournalEntry["kind"];
  ts: string;
  value: Record<string, unknown>;
}

/**
 * The first call where run B did something else than run A: a request that
 * differs (and which message of it), another reply, another tool call or
 * result, a call one run made and the other did not. Calls are taken in the
 * order run A made them.
 */
export function diffJournals(a: readonly JournalEntry[], b: readonly JournalEntry[]): Divergence | undefined {
  const rowsA = calls(a);
  const rowsB = new Map(calls(b).map((r) => [r.key, r]));
  for (const x of rowsA) {
    const y = rowsB.get(x.key);
    rowsB.delete(x.key);
    const who = `${x.key} (${agentOf(a, x.key)})`;
    if (!y) return { at: who, what: `run B has no ${describe(x)} here` };
    if (x.kind === "model.reply" && y.kind === "model.reply") {
      const ra = x.value.request as { hash: string; messages: string[] } | undefined;
      const rb = y.value.request as { hash: string; messages: string[] } | undefined;
      if (ra && rb && ra.hash !== rb.hash) {
        const i = ra.messages.findIndex((h, n) => rb.messages[n] !== h);
        const which =
          i < 0
            ? ra.messages.length !== rb.messages.length
              ? `run B sends ${rb.messages.length} messages, run A ${ra.messages.length}`
              : "the tools or the answer format differ"
            : `message ${i} (${roleOf(ra.messages[i] ?? rb.messages[i])}) differs`;
        return { at: who, what: `the request of model call ${x.key} differs: ${which}` };
      }
      const field = firstDifference(pick(x.value, ["content", "tool_calls", "finish_reason"]), pick(y.value, ["content", "tool_calls", "finish_reason"]));
      if (field) return { at: who, what: `the model's reply differs: ${field.path}`, expected: field.a, got: field.b };
      continue;
    }
    const field = firstDifference(pick(x.value, ["tool", "arguments", "ok", "result", "error"]), pick(y.value, ["tool", "arguments", "ok", "result", "error"]));
    if (field || x.kind !== y.kind)
      return { at: who, what: `tool call ${x.key} differs: ${field?.path ?? "one has a result, the other not"}`, expected: field?.a, got: field?.b };
  }
  const extra = [...rowsB.values()][0];
  if (extra) return { at: `${extra.key} (${agentOf(b, extra.key)})`, what: `run B made a ${describe(extra)} run A did not` };
  return undefined;
}

function calls(entries: readonly JournalEntry[]): Row[] {
  return entries
    .filter((e) => e.kind === "model.reply" || e.kind === "tool.result" || e.kind === "tool.started")
    .map((e) => ({ key: e.key, kind: e.kind, ts: e.ts, value: JSON.parse(e.json) as Record<string, unknown> }))
    .sort((x, y) => (x.ts < y.ts ? -1 : x.ts > y.ts ? 1 : compareKeys(x.key, y.key)));
}

/** Keys in call order: ordinals compared as numbers (`0/m2` before `0/m10`). */
export function compareKeys(a: string, b: string): number {
  const pa = a.split(/([./])/);
  const pb = b.split(/([./])/);
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i] ?? "";
    const y = pb[i] ?? "";
    if (x === y) continue;
    const nx = Number(x.replace(/^[a-z]/, ""));
    const ny = Number(y.replace(/^[a-z]/, ""));
    if (x[0] === y[0] && Number.isFinite(nx) && Number.isFinite(ny)) return nx - ny;
    return x < y ? -1 : 1;
  }
  return pa.length - pb.length;
}

function agentOf(entries: readonly JournalEntry[], key: string): string {
  const step = key.slice(0, key.lastIndexOf("/"));
  const row = entries.find((e) => e.kind === "step" && e.key === step);
  return row ? String((JSON.parse(row.json) as { agent: string }).agent) : "?";
}

function roleOf(fingerprint: string | undefined): string {
  const role = fingerprint?.split(":")[0];
  return role === "system"
    ? "the system prompt"
    : role === "user"
      ? "the user's message"
      : role === "assistant"
        ? "a model turn"
        : role === "tool"
          ? "a tool result"
          : "?";
}

function describe(row: Row): string {
  return row.kind === "model.reply" ? "model call" : `call of ${String(row.value.tool)}`;
}

function pick(value: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (value[k] !== undefined) out[k] = value[k];
  return out;
}
