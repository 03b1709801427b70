/**
 * The one state reporter (docs/design/engine.md#states): every kind's machine
 * reports its states through it as `state.changed` events.
 *
 * States are read from the actor's microsteps, not its snapshots: a
 * subscription sees only settled states, after the work a state invokes has
 * begun, while a microstep is seen before it. A run of transient states
 * (`always` transitions) goes out as one event, `from` → `to` with the states
 * passed through as `via`, held until just before the next event of the run
 * (any event: the bus runs the flush first), so the events walk every state
 * in causal order at a few events per round.
 */
import type { InspectionEvent } from "xstate";
import type { RunEventBody } from "../events/types.js";
import type { StateReportOptions } from "../kinds/types.js";

/** What the reporter needs of the run: emit from the step, and hold work until the next event. */
export interface ReporterPorts {
  emit(body: RunEventBody, extra?: { trace_id?: string }): void;
  deferUntilNext(flush: () => void, trace_id?: string): void;
}

/**
 * The reporter of one machine's microsteps, whichever runs it: `step(to,
 * context, source)` for each microstep, with the state it ends in (a dotted
 * path), the context then, and the path of its transition's source ("" for
 * the root). The compiled machines' interpreter calls it directly
 * (src/machine-interpreter/); `stateInspector` feeds it xstate's
 * inspection events.
 */
export function stateReporter(machine: string, ports: ReporterPorts, options: StateReportOptions = {}): (to: string, context: unknown, source: string | undefined) => void {
  let previous = "(start)";
  let pending: { from: string; via: string[]; to: string; trace_id: string | undefined } | undefined;
  const flush = (): void => {
    if (!pending) return;
    const { from, via, to, trace_id } = pending;
    pending = undefined;
    ports.emit(
      { type: "state.changed", machine, from, to, ...(via.length ? { via } : {}) },
      trace_id !== undefined && trace_id !== "" ? { trace_id } : undefined,
    );
  };
  return (to, context, source) => {
    // The initial state is left by the first microstep, which names it as its source.
    if (previous === "(start)" && source) {
      previous = source;
      pending = { from: "(start)", via: [], to: source, trace_id: options.traceId?.(context) };
      ports.deferUntilNext(flush, pending.trace_id);
    }
    if (to === previous) return;
    const trace_id = options.traceId?.(context);
    if (pending && pending.trace_id === trace_id) {
      pending.via.push(pending.to);
      pending.to = to;
    } else {
      flush();
      pending = { from: previous, via: [], to, trace_id };
      ports.deferUntilNext(flush, trace_id);
    }
    previous = to;
  };
}

/**
 * The inspector to create a machine's xstate actor with (`createActor(machine,
 * { inspect })`): it must see the microsteps of the initial state, which are
 * taken when the actor is created.
 */
export function stateInspector(machine: string, ports: ReporterPorts, options: StateReportOptions = {}): (event: InspectionEvent) => void {
  const step = stateReporter(machine, ports, options);
  let started = false;
  return (event) => {
    // The machine's own microsteps, not those of actors it invokes.
    if (event.type !== "@xstate.microstep" || event.actorRef.sessionId !== event.rootId) return;
    const snapshot = event.snapshot as unknown as { value: unknown; context: unknown };
    // Only the first microsteps' sources are read (see stateReporter).
    const source = started ? undefined : (event as { _transitions?: { source?: { path?: string[] } }[] })._transitions?.[0]?.source?.path?.join(".");
    if (source) started = true;
    step(statePath(snapshot.value), snapshot.context, source);
  };
}

/** `{A: {B: 'C'}}` → `A.B.C`; parallel regions joined with `|`. */
export function statePath(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    // One region (every machine but a parallel state's): walk down without building arrays.
    const keys = Object.keys(value);
    if (keys.length === 1) return `${keys[0]}.${statePath((value as Record<string, unknown>)[keys[0]!])}`;
    return Object.entries(value as Record<string, unknown>)
      .map(([key, child]) => `${key}.${statePath(child)}`)
      .join("|");
  }
  return "";
}
