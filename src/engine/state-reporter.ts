/**
 * The one state reporter (docs/design/engine.md#states): every kind's machine
 * runs on xstate's actor, created with this inspector, and its states become
 * `state.changed` events.
 *
 * States are read from the actor's microsteps, not its snapshots: a
 * subscription sees only settled states, after the work a state invokes has
 * begun, while a microstep is seen before it. A run of transient states
 * (`always` transitions) goes out as one event, `from` → `to`, with the states
 * passed through as `via`. It is held until the machine does something
 * outside itself: one of its own actions runs (it may emit), an actor it
 * invokes starts its work, it hears an event, or its macrostep ends. So the
 * events walk every state in causal order, each before the work it starts, at
 * a few events per round. Only xstate's public inspection events are read.
 */
import type { AnyStateMachine, InspectionEvent, StateNode } from "xstate";
import type { RunEventBody } from "../events/types.js";
import type { StateReportOptions } from "../kinds/types.js";

type Emit = (body: RunEventBody, extra?: { trace_id?: string }) => void;

/** The inspector to create a machine's actor with (`createActor(machine, { inspect })`). */
export function stateInspector(machine: AnyStateMachine, emit: Emit, options: StateReportOptions = {}): (event: InspectionEvent) => void {
  const name = machine.id;
  // The initial state is entered without a microstep: the first microstep leaves it.
  let previous: string | undefined;
  let pending: { from: string; via: string[]; to: string; trace_id: string | undefined } | undefined;
  const flush = (): void => {
    if (!pending) return;
    const { from, via, to, trace_id } = pending;
    pending = undefined;
    emit(
      { type: "state.changed", machine: name, from, to, ...(via.length ? { via } : {}) },
      trace_id !== undefined && trace_id !== "" ? { trace_id } : undefined,
    );
  };
  const step = (to: string, context: unknown): void => {
    const trace_id = options.traceId?.(context);
    if (previous === undefined) {
      previous = initialPath(machine.root);
      pending = { from: "(start)", via: [], to: previous, trace_id };
    }
    if (to === previous) return;
    if (pending && pending.trace_id === trace_id) {
      pending.via.push(pending.to);
      pending.to = to;
    } else {
      flush();
      pending = { from: previous, via: [], to, trace_id };
    }
    previous = to;
  };
  return (event) => {
    switch (event.type) {
      case "@xstate.microstep":
        // The machine's own microsteps, not those of actors it invokes.
        if (event.actorRef.sessionId === event.rootId) {
          const snapshot = event.snapshot as unknown as { value: unknown; context: unknown };
          step(statePath(snapshot.value), snapshot.context);
        }
        return;
      case "@xstate.action":
        // xstate's built-in actions (assign, spawning and stopping a child) do nothing outside the machine.
        if (!event.action.type.startsWith("xstate.")) flush();
        return;
      case "@xstate.actor":
        return;
      default:
        // "@xstate.event" (the machine hears an event, or a child is started: its work begins next)
        // and "@xstate.snapshot" (a macrostep ended).
        flush();
    }
  };
}

/** The path of the state a machine starts in: its initial states, down to a leaf. */
function initialPath(root: StateNode): string {
  let node = root;
  while (node.initial?.target[0]) node = node.initial.target[0];
  return node.path.join(".");
}

/** `{A: {B: 'C'}}` → `A.B.C`; parallel regions joined with `|`. */
export function statePath(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    const keys = Object.keys(value);
    if (keys.length === 1) return `${keys[0]}.${statePath((value as Record<string, unknown>)[keys[0]!])}`;
    return Object.entries(value as Record<string, unknown>)
      .map(([key, child]) => `${key}.${statePath(child)}`)
      .join("|");
  }
  return "";
}
