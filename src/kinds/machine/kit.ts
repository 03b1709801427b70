/**
 * What a kind's machine is declared with besides xstate's `setup`
 * (docs/design/kinds.md#the-runner): xstate's own `assign` and `fromPromise`,
 * each remembered as it is made, so that the runner (./interpret.ts) can
 * apply an assignment and start a promise actor without reading xstate's
 * internals. The machines stay xstate machines: xstate's actor runs them as
 * they are (test/kinds/machine/runner.test.ts compares the two).
 */
import { assign as xstateAssign, fromPromise as xstateFromPromise, type NonReducibleUnknown, type PromiseActorLogic } from "xstate";

/** What a promise actor is given when it starts. */
export interface PromiseArgs<TInput> {
  input: TInput;
  signal: AbortSignal;
  self: { send(event: { type: string }): void };
}
export type PromiseCreator = (args: PromiseArgs<unknown>) => PromiseLike<unknown>;
export type Assignment = ((args: { context: unknown; event: unknown }, params: unknown) => object) | Record<string, unknown>;

const assignments = new WeakMap<object, Assignment>();
const creators = new WeakMap<object, PromiseCreator>();

/** xstate's `assign`, remembered for the runner. */
export const assign = ((assignment: Assignment) => {
  const action = (xstateAssign as (a: Assignment) => object)(assignment);
  assignments.set(action, assignment);
  return action;
}) as typeof xstateAssign;

/** xstate's `fromPromise`, remembered for the runner. */
export function fromPromise<TOutput, TInput = NonReducibleUnknown>(
  creator: (args: PromiseArgs<TInput>) => PromiseLike<TOutput>,
): PromiseActorLogic<TOutput, TInput> {
  const logic = xstateFromPromise<TOutput, TInput>(creator as never);
  creators.set(logic, creator as PromiseCreator);
  return logic;
}

/** The assignment of an action made by `assign` above; undefined for any other action. */
export function assignmentOf(action: unknown): Assignment | undefined {
  return typeof action === "function" ? assignments.get(action) : undefined;
}

/** The promise of an actor made by `fromPromise` above; undefined for any other logic. */
export function creatorOf(logic: unknown): PromiseCreator | undefined {
  return typeof logic === "object" && logic !== null ? creators.get(logic) : undefined;
}
