import { redactWithJson } from "../redact.js";
import type { EventScope, RunEvent, RunEventBody } from "./types.js";
import { unreachable } from "../errors.js";

/** A consumer of events. Sinks are called synchronously, in order, for every event. */
export type EventSink = (event: RunEvent) => void;

/** The JSON text of each event that passed a bus, made once when it was redacted. */
const jsonOfEvent = new WeakMap<RunEvent, string>();

/**
 * The event as every sink can record it: a field whose value cannot become
 * JSON (nested too deep for JSON.stringify, a cycle, a BigInt) is replaced by
 * a note saying so, so no event is ever lost between the bus and a sink
 * (docs/design/engine.md#limits). Only `unknown`-typed fields (tool
 * arguments and results) can be such values.
 */
function maskedJson(event: RunEvent, secrets: readonly string[]): { value: RunEvent; json: string } {
  try {
    return redactWithJson(event, secrets);
  } catch {
    return redactWithJson(recordable(event), secrets);
  }
}

function recordable(event: RunEvent): RunEvent {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event)) {
    try {
      JSON.stringify(value);
      out[key] = value;
    } catch (err) {
      out[key] = `[not recorded: ${err instanceof RangeError ? "nested too deeply" : "not JSON-serialisable"}]`;
    }
  }
  return out as unknown as RunEvent;
}

/** An event's JSON text: the bus's own when the event came through one, else made now. */
export function eventJson(event: RunEvent): string {
  return jsonOfEvent.get(event) ?? JSON.stringify(event);
}

/**
 * An event's JSON text, which its store has now written: it is no longer
 * kept beside the event (a sink may hold the event long after; its JSON was
 * as big again). A later reader makes it anew.
 */
export function takeEventJson(event: RunEvent): string {
  const json = eventJson(event);
  jsonOfEvent.delete(event);
  return json;
}

/**
 * The per-task event bus: stamps `seq`, `ts` and `task_id` on every event,
 * masks secrets in it (the one redaction stage: every sink, the run's store
 * and so every stream get the masked event) and fans it out to sinks. It
 * keeps no event: the run's writer commits each to the store, and every
 * reader (`TeamRun.events`, a stream of a run, of a session, of a queued run
 * on any server) reads them back through the one `follow` of
 * src/store/follow.ts, woken by the store's commit
 * (docs/server.md#where-an-event-reaches-the-stream).
 */
export class EventBus {
  private seq: number;
  private readonly sinks: EventSink[] = [];
  private readonly taps: EventSink[] = [];
  /** The events this bus masked: `mask` gives them as they are. */
  private readonly maskedByBus = new WeakSet<RunEvent>();
  private closed = false;
  private readonly secrets: readonly string[];
  /** The task id masked, and its JSON text as a field; made on the first event masked. */
  private taskField: MaskedFields<{ task_id: string }> | undefined;
  /** Each scope's fields masked, and their JSON text, made once per scope object (a step's, a recursion's). */
  private readonly scopeFields = new WeakMap<EventScope, ScopeField>();

  constructor(
    readonly taskId: string,
    private readonly now: () => Date = () => new Date(),
    /** Exact values masked in every event, on top of the generic rules (src/redact.ts). */
    options: { secrets?: readonly string[]; afterSeq?: number } = {},
  ) {
    this.secrets = options.secrets ?? [];
    // A resumed run's events go on after those stored before (docs/durable-runs.md).
    this.seq = options.afterSeq ?? 0;
  }

  subscribe(sink: EventSink): void {
    this.sinks.push(sink);
  }

  /**
   * Watch events inside the engine (usage totals): called with each event as
   * emitted, before masking, so it must never pass an event on. Sinks that
   * write, print or send use `subscribe`.
   */
  tap(watch: EventSink): void {
    this.taps.push(watch);
  }

  /** Emit an event: masked for the sinks when there are any (nothing is paid for events nobody reads); returns what the sinks got. */
  emit(body: RunEventBody, scope: EventScope): RunEvent {
    if (this.closed) unreachable(`event ${body.type} emitted after the task's bus closed`);
    const listening = this.sinks.length > 0;
    // One plain copy of the body, read once: masked and serialised alone when someone listens,
    // then stamped in place into the event.
    const plain = Object.assign({}, body);
    const own = listening ? this.maskedBody(plain) : undefined;
    const raw = stamp(plain, ++this.seq, this.now().toISOString(), this.taskId, scope);
    for (const watch of this.taps) watch(raw);
    if (!listening) return raw;
    const event = this.maskedParts(raw, own, scope);
    this.maskedByBus.add(event);
    for (const sink of this.sinks) sink(event);
    return event;
  }

  /**
   * The body (a plain copy) masked and its JSON, when the envelope can be
   * added to that text as it stands: not for a body that carries an
   * envelope field itself or a `toJSON` (no event type does), nor one that
   * is not JSON as it is. Those are masked whole, by `maskedParts`.
   */
  private maskedBody(plain: RunEventBody): { value: RunEventBody; json: string } | undefined {
    if (
      "seq" in plain ||
      "ts" in plain ||
      "task_id" in plain ||
      "agent_id" in plain ||
      "step_id" in plain ||
      "parent_step_id" in plain ||
      "trace_id" in plain
    ) {
      return undefined;
    }
    if (typeof (plain as { toJSON?: unknown }).toJSON === "function") return undefined;
    try {
      return redactWithJson(plain, this.secrets);
    } catch {
      // Not JSON as it is: the whole event goes the way that records what it can.
      return undefined;
    }
  }

  /**
   * The event masked from its parts: the body masked and serialised
   * (`maskedBody`), the envelope's fields (seq, ts, the task id, the scope's)
   * added to its JSON text, the scope's masked once per scope object. The
   * same value and text as masking the whole event (`mask`), for about
   * 40 % less: the envelope was ~170 of an event's ~375 bytes
   * (docs/performance.md#where-the-time-goes).
   */
  private maskedParts(raw: RunEvent, own: { value: RunEventBody; json: string } | undefined, scope: EventScope): RunEvent {
    // A configured secret could be part of a timestamp (a date): only the whole event's masking looks there.
    if (own === undefined || own.json.length < 3 || this.secrets.some((s) => s.length >= 6 && raw.ts.includes(s))) {
      const { value, json } = maskedJson(raw, this.secrets);
      jsonOfEvent.set(value, json);
      return value;
    }
    const task = (this.taskField ??= maskedFields({ task_id: this.taskId }, this.secrets));
    let masked = this.scopeFields.get(scope);
    // Checked field by field: a scope object changed since (none of the engine's are) is masked again.
    if (
      masked === undefined ||
      masked.agent_id !== scope.agent_id ||
      masked.step_id !== scope.step_id ||
      masked.parent_step_id !== scope.parent_step_id ||
      masked.trace_id !== scope.trace_id
    ) {
      masked = scopeField(scope, this.secrets);
      this.scopeFields.set(scope, masked);
    }
    const task_id = task.value.task_id;
    const event = own.value === raw && task_id === raw.task_id && masked.scope === scope ? raw : stamped(own.value, raw.seq, raw.ts, task_id, masked.scope);
    jsonOfEvent.set(event, `${own.json.slice(0, -1)},"seq":${raw.seq},"ts":"${raw.ts}"${task.json}${masked.json}}`);
    return event;
  }

  /** The masked form of an event this bus emitted (what `emit` returned is the raw one when nobody listened). */
  mask(event: RunEvent): RunEvent {
    if (this.maskedByBus.has(event)) return event;
    const { value, json } = maskedJson(event, this.secrets);
    jsonOfEvent.set(value, json);
    return value;
  }

  /** No more events: one emitted after is a bug. */
  close(): void {
    this.closed = true;
  }
}

/**
 * The scope of each recursion of a step: `base` with its `trace_id`, one
 * object for the recursion last asked for (made anew when another is
 * asked). A step and its toolbox share one, so a recursion's events carry
 * one scope object, which the bus masks once (`maskedParts`); built with
 * `Object.assign` (docs/performance.md#where-the-time-goes).
 */
export function recursionScopes(base: EventScope): (trace_id: string | undefined) => EventScope {
  let last = base;
  return (trace_id) => {
    if (!trace_id) return base;
    if (last.trace_id !== trace_id) last = Object.assign({}, base, { trace_id });
    return last;
  };
}

/** Envelope fields masked, and their JSON text as it follows other fields: `,"name":value,...` (empty when none is defined). */
interface MaskedFields<T> {
  value: T;
  json: string;
}

function maskedFields<T extends object>(fields: T, secrets: readonly string[]): MaskedFields<T> {
  const { value, json } = redactWithJson(fields, secrets);
  return { value, json: json.length > 2 ? `,${json.slice(1, -1)}` : "" };
}

/** A scope's fields as given (to check it is unchanged), masked (`scope`), and their JSON text (`maskedFields`). */
interface ScopeField extends EventScope {
  scope: EventScope;
  json: string;
}

/** A scope's defined fields masked, in the order `stamped` adds them. */
function scopeField(scope: EventScope, secrets: readonly string[]): ScopeField {
  const fields: EventScope = { agent_id: scope.agent_id };
  if (scope.step_id !== undefined) fields.step_id = scope.step_id;
  if (scope.parent_step_id !== undefined) fields.parent_step_id = scope.parent_step_id;
  if (scope.trace_id !== undefined) fields.trace_id = scope.trace_id;
  const { value, json } = maskedFields(fields, secrets);
  return Object.assign(fields, { scope: value === fields ? scope : value, json });
}

/**
 * The event: the body's fields, then `seq`, `ts`, `task_id` and the scope's
 * defined fields, in that order. Built with `Object.assign` and plain sets, not
 * `{ ...body, seq, ... }`: on Node 20 (V8 11.3) every property added to an
 * object made by a spread takes a slow path, ~1 µs each, some 4 µs an event
 * (docs/performance.md#where-the-time-goes).
 */
function stamped(body: RunEventBody, seq: number, ts: string, task_id: string, scope: EventScope): RunEvent {
  return stamp(Object.assign({}, body), seq, ts, task_id, scope);
}

/** `stamped`, on a copy of the body the caller made and hands over. */
function stamp(copy: RunEventBody, seq: number, ts: string, task_id: string, scope: EventScope): RunEvent {
  const event = copy as Record<string, unknown>;
  event.seq = seq;
  event.ts = ts;
  event.task_id = task_id;
  event.agent_id = scope.agent_id;
  if (scope.step_id !== undefined) event.step_id = scope.step_id;
  if (scope.parent_step_id !== undefined) event.parent_step_id = scope.parent_step_id;
  if (scope.trace_id !== undefined) event.trace_id = scope.trace_id;
  return event as unknown as RunEvent;
}
