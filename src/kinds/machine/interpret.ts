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
  const run = new Interpreter(compiled, implementations, options.observer);
  run.turn(() => run.begin(input, options.start));
  return run.done;
}

/** One run of a compiled machine: its state, context, mailbox and invoked actors, and the steps that move them. */
class Interpreter {
  private readonly machine: AnyStateMachine;
  private readonly named: Required<Implementations>;
  private readonly actions = new Map<Ref, Action>();
  private leaf: State;
  private context: unknown;
  private status: "active" | "done" | "error" = "active";
  private output: unknown;
  private resolve!: (value: unknown) => void;
  private reject!: (error: unknown) => void;
  readonly done = new Promise<unknown>((ok, fail) => {
    this.resolve = ok;
    this.reject = fail;
  });
  private readonly internal: AnyEvent[] = [];
  private readonly mailbox: AnyEvent[] = [];
  private processing = false;
  /** While the initial states are entered, the actions that are not assignments wait for the start. */
  private deferred: (() => void)[] | undefined = [];
  /** The invoked actors of the active states, by id. */
  private readonly children = new Map<string, Child>();
  /** What xstate defers to the end of a macrostep: starting the actors invoked in it, aborting those whose state it left. */
  private readonly afterMacrostep: (() => void)[] = [];
  private readonly self = { send: (event: AnyEvent) => this.send(event) };

  constructor(
    private readonly compiled: Compiled,
    implementations: Implementations,
    private readonly observer: MachineObserver | undefined,
  ) {
    this.machine = compiled.machine;
    this.named = { actions: implementations.actions ?? {}, actors: implementations.actors ?? {}, guards: implementations.guards ?? {} };
    this.leaf = compiled.root;
  }

  /** The initial macrostep: the context made, the initial states entered, then their actors started and the deferred actions run. */
  begin(input: unknown, start: AnyEvent | undefined): void {
    const init = { type: "xstate.init", input };
    const factory = (this.machine.config as { context?: unknown }).context;
    // A factory's context is copied as an assignment would be; a plain object is the context itself, as in xstate.
    this.context = typeof factory === "function" ? Object.assign({}, factory({ input, self: this.self })) : (factory ?? {});
    this.enterAll(this.compiled.initial.enter, init);
    this.leaf = this.compiled.initial.leaf;
    if (this.status === "done") this.exitAll(this.leaf.chain, init);
    this.settle(init);
    const initial = this.deferred ?? [];
    this.deferred = undefined;
    // As xstate's actor starts: the initial states' actors first, then the actions it deferred.
    this.endMacrostep();
    for (const action of initial) action();
    if (start !== undefined) this.mailbox.push(start);
    this.drain();
  }

  /** Run `work` as the machine's turn: events sent meanwhile wait in the mailbox; a throw fails the machine. */
  turn(work: () => void): void {
    this.processing = true;
    try {
      work();
      if (this.status === "done") {
        this.observer?.settle();
        this.resolve(this.output);
      }
    } catch (error) {
      this.status = "error";
      this.mailbox.length = 0;
      // Every actor is stopped: those of the failed macrostep never start, those at work are aborted (xstate's actor leaves them running).
      for (const id of [...this.children.keys()]) this.stop(id);
      for (const effect of this.afterMacrostep.splice(0)) effect();
      this.reject(error);
    } finally {
      this.processing = false;
    }
  }

  private send(event: AnyEvent): void {
    if (this.status !== "active") return;
    this.mailbox.push(event);
    if (!this.processing) this.turn(() => this.drain());
  }

  private drain(): void {
    for (let e = this.mailbox.shift(); e !== undefined && this.status === "active"; e = this.mailbox.shift()) this.macrostep(e);
  }

  /** One event's macrostep; an actor's error that no transition takes fails the machine, as in xstate. */
  private macrostep(event: AnyEvent): void {
    this.observer?.settle();
    const edge = this.select(event);
    if (edge === undefined && event.type.startsWith("xstate.error.actor.")) {
      this.observer?.microstep(this.leaf.value, this.context);
      throw event.error;
    }
    this.microstep(edge, event);
    this.settle(event);
    this.endMacrostep();
  }

  /** The transient transitions and raised done events after a microstep, until the machine rests. */
  private settle(event: AnyEvent): void {
    let current: unknown = event;
    let eventless = true;
    while (this.status === "active") {
      const next = eventless ? this.selectAlways(current) : undefined;
      if (next !== undefined) {
        eventless = this.microstep(next, current);
        continue;
      }
      const raised = this.internal.shift();
      if (raised === undefined) break;
      current = raised;
      this.microstep(this.select(raised), raised);
      eventless = true;
    }
    this.internal.length = 0;
  }

  /** The macrostep has ended: its actors start and those it stopped are aborted, in the order it met them. */
  private endMacrostep(): void {
    this.observer?.settle();
    for (const effect of this.afterMacrostep.splice(0)) effect();
  }

  /** One microstep; true when it changed the state or the context (xstate stops taking `always` transitions otherwise). */
  private microstep(edge: Edge | undefined, event: unknown): boolean {
    const before = this.leaf;
    const was = this.context;
    if (edge) {
      if (edge.moves) {
        let move = edge.moves.get(this.leaf);
        if (move === undefined) edge.moves.set(this.leaf, (move = moveOf(this.compiled, edge, this.leaf)));
        this.exitAll(move.exit, event);
        this.execute(edge.actions, event);
        this.enterAll(move.enter, event);
        this.leaf = move.leaf;
      } else this.execute(edge.actions, event);
      // Once the machine is done, every active state is left, the leaf's first.
      if (this.status === "done") this.exitAll(this.leaf.chain, event);
    }
    this.observer?.microstep(this.leaf.value, this.context);
    return this.leaf !== before || this.context !== was;
  }

  private select(event: AnyEvent): Edge | undefined {
    for (const n of this.leaf.chain) {
      const edges = n.on.get(event.type);
      if (edges !== undefined) for (const e of edges) if (this.passesOn(e, event)) return e;
    }
    return undefined;
  }

  /** A guard of an event's transition that throws fails the machine saying where, in xstate's words. */
  private passesOn(e: Edge, event: AnyEvent): boolean {
    try {
      return this.passes(e.guard, event);
    } catch (error) {
      const name = e.guard?.name !== undefined ? `'${e.guard.name}' ` : "";
      const why = (error as Error | undefined)?.message;
      throw new RuntimeError("INTERNAL", `Unable to evaluate guard ${name}in transition for event '${event.type}' in state node '${e.source.x.id}':\n${why}`);
    }
  }

  private selectAlways(event: unknown): Edge | undefined {
    for (const n of this.leaf.chain) if (n.always !== undefined) for (const e of n.always) if (this.passes(e.guard, event)) return e;
    return undefined;
  }

  private passes(g: Ref | undefined, event: unknown): boolean {
    if (g === undefined) return true;
    const fn = g.inline ?? this.named.guards[g.name!] ?? this.machine.implementations.guards[g.name!];
    if (typeof fn !== "function") return unreachable(`machine ${this.machine.id}: guard '${g.name}' is not implemented`);
    return Boolean(fn({ context: this.context, event }, this.paramsOf(g.params, event)));
  }

  private enterAll(states: State[], event: unknown): void {
    for (const n of states) {
      this.execute(n.entry, event);
      for (const invocation of n.invoke) this.spawn(invocation, event);
      if (!n.final) continue;
      const parent = n.parent!;
      const own = n.x.output !== undefined ? this.outputOf(n.x.output, event) : undefined;
      this.internal.push({ type: `xstate.done.state.${parent.x.id}`, output: own });
      if (parent.parent) continue;
      this.status = "done";
      if (this.compiled.root.x.output === undefined) continue;
      this.output = this.outputOf(this.compiled.root.x.output, { type: `xstate.done.state.${n.x.id}`, output: own });
    }
  }

  private exitAll(states: State[], event: unknown): void {
    for (const n of states) {
      this.execute(n.exit, event);
      for (const invocation of n.invoke) this.stop(invocation.id);
    }
  }

  private execute(refs: Ref[], event: unknown): void {
    for (const r of refs) {
      let action = this.actions.get(r);
      if (action === undefined) this.actions.set(r, (action = actionOf(r, this.named.actions, this.machine)));
      const params = this.paramsOf(r.params, event);
      const a = action;
      if (a.assignment !== undefined) this.context = assigned(a.assignment, this.context, event, params);
      else if (this.deferred) {
        const args = { context: this.context, event, self: this.self };
        this.deferred.push(() => a.fn(args, params));
      } else {
        this.observer?.settle();
        a.fn({ context: this.context, event, self: this.self }, params);
      }
    }
  }

  private paramsOf(p: Params, event: unknown): unknown {
    return p === undefined ? undefined : typeof p === "function" ? p({ context: this.context, event }) : p.value;
  }

  private outputOf(mapper: unknown, event: unknown): unknown {
    return typeof mapper === "function" ? (mapper as (a: object) => unknown)({ context: this.context, event, self: this.self }) : mapper;
  }

  /** A state's actor, made as the state is entered: its input is read now, its start waits for the end of the macrostep. */
  private spawn(invocation: Invocation, event: unknown): void {
    const { named, machine } = this;
    const logic = typeof invocation.src === "string" ? (named.actors[invocation.src] ?? machine.implementations.actors[invocation.src]) : invocation.src;
    const creator = creatorOf(logic);
    if (creator === undefined) unreachable(`machine ${machine.id}: actor '${String(invocation.src)}' was not made with the runner's fromPromise`);
    const input = invocation.input?.({ context: this.context, event, self: this.self });
    const child: Child = { id: invocation.id, creator, input, started: false, controller: undefined };
    this.children.set(child.id, child);
    this.afterMacrostep.push(() => this.start(child));
  }

  private stop(id: string): void {
    const child = this.children.get(id);
    if (child === undefined) return;
    this.children.delete(id);
    // One not started yet never starts.
    if (child.started) this.afterMacrostep.push(() => child.controller?.abort());
  }

  /** Start `child`'s work, unless its state was left meanwhile; what it ends with is the machine's next event, unless its state was left by then. */
  private start(child: Child): void {
    if (this.children.get(child.id) !== child) return;
    child.started = true;
    const end = (event: AnyEvent): void => {
      if (this.children.get(child.id) !== child) return;
      this.children.delete(child.id);
      this.send(event);
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
          self: this.self,
        }),
      );
    } catch (error) {
      work = Promise.reject(error);
    }
    void work.then(
      (output) => end({ type: `xstate.done.actor.${child.id}`, output, actorId: child.id }),
      (error: unknown) => end({ type: `xstate.error.actor.${child.id}`, error, actorId: child.id }),
    );
  }
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
