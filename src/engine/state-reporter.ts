/**
 * The one state reporter (docs/design/engine.md#states): every kind's machine
 * runs on the project's runner (src/kinds/run-machine.ts), which tells this
 * observer each microstep, and its states become `state.changed` events.
 *
 * A run of transient states (`always` transitions) goes out as one event,
 * `from` → `to`, with the states passed through as `via`. It is held until
 * the machine does something outside itself: one of its own actions runs (it
 * may emit), an actor it invokes starts its work, it hears an event, or it
 * rests. So the events walk every state in causal order, each before the
 * work it starts, at a few events per round.
 */
import type { AnyStateMachine, StateNode } from "xstate";
import type { RunEventBody } from "../events/types.js";
import type { MachineObserver } from "../kinds/machine/interpret.js";
import type { StateReportOptions } from "../kinds/types.js";

type Emit = (body: RunEventBody, extra?: { trace_id?: string }) => void;

/** The observer to run a machine with (src/kinds/run-machine.ts). */
export function stateObserver(machine: AnyStateMachine, emit: Emit, options: StateReportOptions = {}): MachineObserver {
  const name = machine.id;
  // The initial states are entered without a microstep: the first microstep leaves them.
  let previous: string | undefined;
  let pending: { from: string; via: string[]; to: string; trace_id: string | undefined } | undefined;
  const settle = (): void => {
    if (!pending) return;
    const { from, via, to, trace_id } = pending;
    pending = undefined;
    emit(
      { type: "state.changed", machine: name, from, to, ...(via.length ? { via } : {}) },
      trace_id !== undefined && trace_id !== "" ? { trace_id } : undefined,
    );
  };
  return {
    settle,
    microstep(to, context) {
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
        settle();
        pending = { from: previous, via: [], to, trace_id };
      }
      previous = to;
    },
  };
}

/** The path of the state a machine starts in: its initial states, down to a leaf. */
function initialPath(root: StateNode): string {
  let node = root;
  while (node.initial?.target[0]) node = node.initial.target[0];
  return node.path.join(".");
}
