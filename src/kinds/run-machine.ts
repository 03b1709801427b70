/**
 * The one way a kind runs its machine (docs/design/kinds.md#running-a-kind):
 * xstate's own actor, created with the step's state reporter, started, and
 * awaited to its output. The machine comes with its implementations already
 * bound to the step (`machine.provide({ actors, actions })`); nothing of the
 * run goes in its input or context. xstate's actor was chosen over an
 * interpreter on xstate's pure functions by measurement: it is the cheaper of
 * the two (docs/design/kinds.md#why-the-runner-is-xstates-actor-and-what-it-costs,
 * bench/runner-cost.mjs).
 */
import { type AnyStateMachine, createActor, type EventFrom, type InputFrom, type OutputFrom, toPromise } from "xstate";
import type { AgentContext, StateReportOptions } from "./types.js";

export interface RunMachineOptions<M extends AnyStateMachine> extends StateReportOptions {
  /**
   * Sent once the actor has started, for a machine whose initial state waits
   * for it: xstate runs the initial state's actions at `start()`, after the
   * actors it invokes, so a machine whose first state works starts on an event.
   */
  start?: EventFrom<M>;
}

/** Run `machine` (bound to this step) from `input` to its output; rejects when the machine errors (a bug). */
export function runMachine<M extends AnyStateMachine>(
  ctx: AgentContext,
  machine: M,
  input: InputFrom<M>,
  options: RunMachineOptions<M> = {},
): Promise<OutputFrom<M>> {
  const actor = createActor(machine, { input, inspect: ctx.inspectStates(machine, options) });
  const output = toPromise(actor);
  actor.start();
  if (options.start !== undefined) actor.send(options.start);
  return output as Promise<OutputFrom<M>>;
}
