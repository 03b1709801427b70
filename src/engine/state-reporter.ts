import type { AnyActorRef } from "xstate";
import type { RunEventBody } from "../events/types.js";

/**
 * Emit a `state.changed` event whenever an actor's state value changes.
 * The state is written as a dotted path of the active leaf states
 * (`RECURSION.CALL_LLM.OBSERVE`), so the top-level sequence stays readable.
 */
export function observeStates(actor: AnyActorRef, machine: string, emit: (body: RunEventBody) => void): void {
  let previous = "";
  actor.subscribe({
    next(snapshot: { value: unknown }) {
      const current = statePath(snapshot.value);
      if (current !== previous) {
        emit({ type: "state.changed", machine, from: previous || "(start)", to: current });
        previous = current;
      }
    },
    error() {},
  });
}

/** `{A: {B: 'C'}}` → `A.B.C`; parallel regions joined with `|`. */
export function statePath(value: unknown): string {
  if (typeof value === "string") return value;
  if (value && typeof value === "object") {
    return Object.entries(value as Record<string, unknown>)
      .map(([key, child]) => `${key}.${statePath(child)}`)
      .join("|");
  }
  return "";
}
