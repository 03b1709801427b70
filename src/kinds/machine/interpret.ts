/**
 * The runner's second half (docs/design/kinds.md#the-runner): a compiled
 * machine run microstep by microstep as xstate's actor runs it, with the
 * step's implementations. Events wait their turn in a mailbox; each is one
 * macrostep: its transition, then the transient (`always`) transitions and
 * the raised done events until the machine rests. As in xstate, a state's
 * invoked promise actor takes its input as the state is entered and starts
 * once the macrostep has ended, if its state is still active; leaving the
 * state drops what it ends with, and aborts it once the macrostep has ended.
 */
import type { AnyStateMachine } from "xstate";
import { RuntimeError, unreachable } from "../../errors.js";
import { type Action, actionOf, type Compiled, type Edge, type Invocation, moveOf, type Params, type Ref, type State } from "./compile.js";
import { creatorOf, type PromiseCreator } from "./kit.js";

/** The run's own implementations, as `machine.provide` would take them. */
export interface Implementations {
  actions?: Record<string, unknown>;
  actors?: Record<string, unknown>;
  guards?: Record<string, unknown>;
}

/** What the runner tells of a run: each microstep, and each time the machine does something outside itself. */
export interface MachineObserver {
  /** A microstep ended in `value` (dotted) with `context`. */
  microstep(value: string, context: unknown): void;
  /** The machine heard an event, is about to run one of its own actions or start an actor's work, or rests. */
  settle(): void;
}

type AnyEvent = { type: string; [key: string]: unknown };

/** An invoked actor, from its state's entry; its AbortController is made when its work first reads the signal. */
interface Child {
  id: string;
  creator: PromiseCreator;
  input: unknown;
  started: boolean;
  controller: AbortController | undefined;
}

/** Run `compiled` from `input` to its output; `start`, when given, is sent once it has started. */
export function interpret(
  compiled: Compiled,
  implementations: Implementations,
  input: unknown,
  options: { start?: AnyEvent; observer?: MachineObserver },
): Promise<unknown> {
  const machine: AnyStateMachine = compiled.machine;
  const observer = options.observer;
  const named = { actions: implementations.actions ?? {}, actors: implementations.actors ?? {}, guards: implementations.guards ?? {} };
  const actions = new Map<Ref, Action>();
  let leaf = compiled.root;
  let context: unknown;
  let status: "active" | "done" | "error" = "active";
  let output: unknown;
  let resolve!: (value: unknown) => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<unknown>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  const internal: AnyEvent[] = [];
  const mailbox: AnyEvent[] = [];
  let processing = false;
  /** While the initial states are entered, the actions that are not assignments wait for the start. */
  let deferred: (() => void)[] | undefined = [];
  /** The invoked actors of the active states, by id. */
  const children = new Map<string, Child>();
  /** What xstate defers to the end of a macrostep: starting the actors invoked in it, aborting those whose state it left. */
  const afterMacrostep: (() => void)[] = [];

  const self = { send: (event: AnyEvent) => send(event) };
  const paramsOf = (p: Params, event: unknown): unknown => (p === undefined ? undefined : typeof p === "function" ? p({ context, event }) : p.value);
  const execute = (refs: Ref[], event: unknown): void => {
    for (const r of refs) {
      let action = actions.get(r);
      if (action === undefined) actions.set(r, (action = actionOf(r, named.actions, machine)));
      const params = paramsOf(r.params, event);
      const a = action;
      if (a.assignment !== undefined) context = assigned(a.assignment, context, event, params);
      else if (deferred) {
        const args = { context, event, self };
        deferred.push(() => a.fn(args, params));
      } else {
        observer?.settle();
        a.fn({ context, event, self }, params);
      }
    }
  };
  const passes = (g: Ref | undefined, event: unknown): boolean => {
    if (g === undefined) return true;
    const fn = g.inline ?? named.guards[g.name!] ?? machine.implementations.guards[g.name!];
    if (typeof fn !== "function") return unreachable(`machine ${machine.id}: guard '${g.name}' is not implemented`);
    return Boolean(fn({ context, event }, paramsOf(g.params, event)));
  };
  const outputOf = (mapper: unknown, event: unknown): unknown =>
    typeof mapper === "function" ? (mapper as (a: object) => unknown)({ context, event, self }) : mapper;

  const enterAll = (states: State[], event: unknown): void => {
    for (const n of states) {
      execute(n.entry, event);
      for (const invocation of n.invoke) spawn(invocation, event);
      if (!n.final) continue;
      const parent = n.parent!;
      const own = n.x.output !== undefined ? outputOf(n.x.output, event) : undefined;
      internal.push({ type: `xstate.done.state.${parent.x.id}`, output: own });
      if (parent.parent) continue;
      status = "done";
      if (compiled.root.x.output === undefined) continue;
      output = outputOf(compiled.root.x.output, { type: `xstate.done.state.${n.x.id}`, output: own });
    }
  };
  const exitAll = (states: State[], event: unknown): void => {
    for (const n of states) {
      execute(n.exit, event);
      for (const invocation of n.invoke) stop(invocation.id);
    }
  };
  /** A state's actor, made as the state is entered: its input is read now, its start waits for the end of the macrostep. */
  const spawn = (invocation: Invocation, event: unknown): void => {
    const logic = typeof invocation.src === "string" ? (named.actors[invocation.src] ?? machine.implementations.actors[invocation.src]) : invocation.src;
    const creator = creatorOf(logic);
    if (creator === undefined) unreachable(`machine ${machine.id}: actor '${String(invocation.src)}' was not made with the runner's fromPromise`);
    const child: Child = { id: invocation.id, creator, input: invocation.input?.({ context, event, self }), started: false, controller: undefined };
    children.set(child.id, child);
    afterMacrostep.push(() => start(child));
  };
  const stop = (id: string): void => {
    const child = children.get(id);
    if (child === undefined) return;
    children.delete(id);
    // One not started yet never starts.
    if (child.started) afterMacrostep.push(() => child.controller?.abort());
  };
  /** One microstep; true when it changed the state or the context (xstate stops taking `always` transitions otherwise). */
  const microstep = (edge: Edge | undefined, event: unknown): boolean => {
    const before = leaf;
    const was = context;
    if (edge) {
      if (edge.moves) {
        let move = edge.moves.get(leaf);
        if (move === undefined) edge.moves.set(leaf, (move = moveOf(compiled, edge, leaf)));
        exitAll(move.exit, event);
        execute(edge.actions, event);
        enterAll(move.enter, event);
        leaf = move.leaf;
      } else execute(edge.actions, event);
      // Once the machine is done, every active state is left, the leaf's first.
      if (status === "done") exitAll(leaf.chain, event);
    }
    observer?.microstep(leaf.value, context);
    return leaf !== before || context !== was;
  };
  const select = (event: AnyEvent): Edge | undefined => {
    for (const n of leaf.chain) {
      const edges = n.on.get(event.type);
      if (edges !== undefined) for (const e of edges) if (passesOn(e, event)) return e;
    }
    return undefined;
  };
  /** A guard of an event's transition that throws fails the machine saying where, in xstate's words. */
  const passesOn = (e: Edge, event: AnyEvent): boolean => {
    try {
      return passes(e.guard, event);
    } catch (error) {
      const name = e.guard?.name !== undefined ? `'${e.guard.name}' ` : "";
      const why = (error as Error | undefined)?.message;
      throw new RuntimeError("INTERNAL", `Unable to evaluate guard ${name}in transition for event '${event.type}' in state node '${e.source.x.id}':\n${why}`);
    }
  };
  const selectAlways = (event: unknown): Edge | undefined => {
    for (const n of leaf.chain) if (n.always !== undefined) for (const e of n.always) if (passes(e.guard, event)) return e;
    return undefined;
  };
  /** The transient transitions and raised done events after a microstep, until the machine rests. */
  const settle = (event: AnyEvent): void => {
    let current: unknown = event;
    let eventless = true;
    while (status === "active") {
      const next = eventless ? selectAlways(current) : undefined;
      if (next !== undefined) {
        eventless = microstep(next, current);
        continue;
      }
      const raised = internal.shift();
      if (raised === undefined) break;
      current = raised;
      microstep(select(raised), raised);
      eventless = true;
    }
    internal.length = 0;
  };
  /** One event's macrostep; an actor's error that no transition takes fails the machine, as in xstate. */
  const macrostep = (event: AnyEvent): void => {
    observer?.settle();
    const edge = select(event);
    if (edge === undefined && event.type.startsWith("xstate.error.actor.")) {
      observer?.microstep(leaf.value, context);
      throw event.error;
    }
    microstep(edge, event);
    settle(event);
    endMacrostep();
  };
  /** The macrostep has ended: its actors start and those it stopped are aborted, in the order it met them. */
  const endMacrostep = (): void => {
    observer?.settle();
    for (const effect of afterMacrostep.splice(0)) effect();
  };
  /** Start `child`'s work, unless its state was left meanwhile; what it ends with is the machine's next event, unless its state was left by then. */
  const start = (child: Child): void => {
    if (children.get(child.id) !== child) return;
    child.started = true;
    const end = (event: AnyEvent): void => {
      if (children.get(child.id) !== child) return;
      children.delete(child.id);
      send(event);
    };
    let work: Promise<unknown>;
    try {
      work = Promise.resolve(
        child.creator({
          input: child.input,
          get signal() {
            child.controller ??= new AbortController();
            return child.controller.signal;
          },
          self,
        }),
      );
    } catch (error) {
      work = Promise.reject(error);
    }
    void work.then(
      (output) => end({ type: `xstate.done.actor.${child.id}`, output, actorId: child.id }),
      (error: unknown) => end({ type: `xstate.error.actor.${child.id}`, error, actorId: child.id }),
    );
  };
  const drain = (): void => {
    for (let e = mailbox.shift(); e !== undefined && status === "active"; e = mailbox.shift()) macrostep(e);
  };
  /** Run `work` as the machine's turn: events sent meanwhile wait in the mailbox; a throw fails the machine. */
  const turn = (work: () => void): void => {
    processing = true;
    try {
      work();
      if (status === "done") {
        observer?.settle();
        resolve(output);
      }
    } catch (error) {
      status = "error";
      mailbox.length = 0;
      // Every actor is stopped: those of the failed macrostep never start, those at work are aborted (xstate's actor leaves them running).
      for (const id of [...children.keys()]) stop(id);
      for (const effect of afterMacrostep.splice(0)) effect();
      reject(error);
    } finally {
      processing = false;
    }
  };
  function send(event: AnyEvent): void {
    if (status !== "active") return;
    mailbox.push(event);
    if (!processing) turn(drain);
  }

  turn(() => {
    const init = { type: "xstate.init", input };
    const factory = (machine.config as { context?: unknown }).context;
    // A factory's context is copied as an assignment would be; a plain object is the context itself, as in xstate.
    context = typeof factory === "function" ? Object.assign({}, factory({ input, self })) : (factory ?? {});
    enterAll(compiled.initial.enter, init);
    leaf = compiled.initial.leaf;
    if (status === "done") exitAll(leaf.chain, init);
    settle(init);
    const initial = deferred ?? [];
    deferred = undefined;
    // As xstate's actor starts: the initial states' actors first, then the actions it deferred.
    endMacrostep();
    for (const action of initial) action();
    if (options.start !== undefined) mailbox.push(options.start);
    drain();
  });
  return done;
}

/** The context after an assignment: a function's partial, or each key of an object resolved in turn, as xstate's `assign` does. */
function assigned(assignment: NonNullable<Action["assignment"]>, context: unknown, event: unknown, params: unknown): unknown {
  const args = { context, event, spawn: noSpawn };
  if (typeof assignment === "function") return Object.assign({}, context, assignment(args, params));
  const partial: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(assignment)) partial[key] = typeof value === "function" ? value(args, params) : value;
  return Object.assign({}, context, partial);
}

function noSpawn(): never {
  return unreachable("a kind's machine spawns no actor (docs/design/kinds.md#the-runner)");
}
