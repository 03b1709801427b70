/**
 * The one way a kind runs its machine (docs/design/kinds.md#the-runner): the
 * machine, compiled once from its xstate definition (./machine/compile.ts),
 * run by the project's runner (./machine/interpret.ts) with the step's
 * implementations, as `machine.provide(implementations)` would bind them,
 * and the step's state reporter; nothing of the run goes in its input or
 * context. The runner was chosen over xstate's own actor by measurement: the
 * actor cost about 45% more CPU a task at 50 at once (bench/runner-cost.mjs,
 * docs/design/kinds.md#why-the-runner-is-not-xstates-actor).
 */
import type { AnyStateMachine, EventFrom, InputFrom, OutputFrom } from "xstate";
import { compile } from "./machine/compile.js";
import { type Implementations, interpret } from "./machine/interpret.js";
import type { AgentContext, StateReportOptions } from "./types.js";

/** What a machine's `provide` takes: the step's actors, actions and guards, typed by the machine. */
export type ImplementationsOf<M extends AnyStateMachine> = Parameters<M["provide"]>[0];

export interface RunMachineOptions<M extends AnyStateMachine> extends StateReportOptions {
  /**
   * Sent once the machine has started, for a machine whose initial state
   * waits for it: as in xstate, the initial states' actions run at the start,
   * after they are all entered, so a machine whose first state works starts on an event.
   */
  start?: EventFrom<M>;
}

/** Run `machine` with this step's `implementations` from `input` to its output; rejects when the machine fails (a bug). */
export function runMachine<M extends AnyStateMachine>(
  ctx: AgentContext,
  machine: M,
  implementations: ImplementationsOf<M>,
  input: InputFrom<M>,
  options: RunMachineOptions<M> = {},
): Promise<OutputFrom<M>> {
  return interpret(compile(machine), implementations as Implementations, input, {
    ...(options.start !== undefined ? { start: options.start as { type: string } } : {}),
    observer: ctx.observeStates(machine, options),
  }) as Promise<OutputFrom<M>>;
}
