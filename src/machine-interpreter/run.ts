/**
 * The interpreter's second half (docs/design/engine.md#the-interpreter): a
 * compiled machine run, microstep by microstep, as an xstate actor runs it.
 */
import type { AnyStateMachine, EventFromLogic, InputFrom, OutputFrom } from "xstate";
import { moveOf, type Action, type Compiled, type CompiledMachine, type Edge, type Guard, type Implementation, type Params, type State } from "./compile.js";

/** Each microstep as it is taken: the state it ends in, the context, and the transition's source path. */
export type MicrostepObserver = (to: string, context: unknown, source: string) => void;

export interface MachineRun<TMachine extends AnyStateMachine> {
  send(event: EventFromLogic<TMachine>): void;
  /** The machine's output once it is done; rejects with what an action or guard threw. */
  readonly output: Promise<OutputFrom<TMachine>>;
  /** The state value now. */
  readonly value: string;
}

/**
 * Start a compiled machine: its context from `input`, its initial states
 * entered and their transient transitions taken, then, as an xstate actor's
 * `start()` does, the initial states' actions run (their `assign`s were
 * applied in order as the states were entered) and what they sent the
 * machine is taken. Events sent while it works wait their turn; events after
 * it is done or has failed are dropped, as an actor drops them.
 */
export function startMachine<TMachine extends AnyStateMachine>(
  machine: CompiledMachine<TMachine>,
  options: { input: InputFrom<TMachine>; observe?: MicrostepObserver },
): MachineRun<TMachine> {
  const compiled = machine as unknown as Compiled;
  const observe = options.observe;
  let leaf = compiled.root;
  let context: unknown;
  let status: "active" | "done" | "error" = "active";
  let output: unknown;
  let resolve!: (value: OutputFrom<TMachine>) => void;
  let reject!: (error: unknown) => void;
  const done = new Promise<OutputFrom<TMachine>>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  const internal: { type: string; output?: unknown }[] = [];
  const mailbox: { type: string }[] = [];
  let processing = false;
  /** While the initial states are entered, the actions that are not `assign`s wait for the start. */
  let deferred: (() => void)[] | undefined = [];

  // What actions get as `self`: the machine's runners send it their work's outcome.
  const self = { send: (event: { type: string }) => run.send(event as EventFromLogic<TMachine>) };
  const paramsOf = (p: Params, event: unknown): unknown => (p === undefined ? undefined : typeof p === "function" ? p({ context, event }) : p.value);
  const execute = (actions: Action[], event: unknown): void => {
    for (const a of actions) {
      const params = paramsOf(a.params, event);
      if (a.assign) context = Object.assign({}, context, a.fn({ context, event, self, spawn: noSpawn }, params));
      else if (deferred) {
        const args = { context, event, self, system: undefined };
        deferred.push(() => a.fn(args, params));
      } else a.fn({ context, event, self, system: undefined }, params);
    }
  };
  const passes = (g: Guard | undefined, event: unknown): boolean => g === undefined || Boolean(g.fn({ context, event }, paramsOf(g.params, event)));
  const outputOf = (mapper: unknown, event: unknown): unknown =>
    typeof mapper === "function" ? (mapper as Implementation)({ context, event, self }, undefined) : mapper;

  const enterAll = (states: State[], event: unknown): void => {
    for (const n of states) {
      execute(n.entry, event);
      if (!n.final) continue;
      const parent = n.parent!;
      const own = n.x.output !== undefined ? outputOf(n.x.output, event) : undefined;
      internal.push({ type: `xstate.done.state.${parent.x.id}`, output: own });
      if (parent.parent) continue;
      status = "done";
      if (compiled.root.x.output === undefined) continue;
      // xstate works out the final state's output again for the machine's own (a mapper runs twice).
      const again = n.x.output !== undefined ? outputOf(n.x.output, event) : undefined;
      output = outputOf(compiled.root.x.output, { type: `xstate.done.state.${n.x.id}`, output: again });
    }
  };
  /** Once the machine is done, every active state's exit actions run, the leaf's first (as xstate's microstep runs them). */
  const exitIfDone = (event: unknown): void => {
    if (status === "done") for (const n of leaf.chain) execute(n.exit, event);
  };
  /** One microstep; true when it changed the state or the context (xstate stops taking `always` transitions otherwise). */
  const microstep = (edge: Edge | undefined, event: unknown): boolean => {
    const before = leaf;
    const was = context;
    if (edge) {
      if (edge.moves) {
        let move = edge.moves.get(leaf);
        if (move === undefined) edge.moves.set(leaf, (move = moveOf(compiled, edge, leaf)));
        for (const n of move.exit) execute(n.exit, event);
        execute(edge.actions, event);
        enterAll(move.enter, event);
        leaf = move.leaf;
      } else execute(edge.actions, event);
      exitIfDone(event);
    }
    observe?.(leaf.value, context, edge ? edge.source.value : "");
    return leaf !== before || context !== was;
  };
  const select = (event: { type: string }): Edge | undefined => {
    for (const n of leaf.chain) {
      const edges = n.on.get(event.type);
      if (edges === undefined) continue;
      for (const e of edges) {
        let ok: boolean;
        try {
          ok = passes(e.guard, event);
        } catch (err) {
          const name = e.guard?.name !== undefined ? `'${e.guard.name}' ` : "";
          throw new Error(`Unable to evaluate guard ${name}in transition for event '${event.type}' in state node '${n.x.id}':\n${(err as Error)?.message}`);
        }
        if (ok) return e;
      }
    }
    return undefined;
  };
  const selectAlways = (event: unknown): Edge | undefined => {
    for (const n of leaf.chain) {
      if (n.always === undefined) continue;
      for (const e of n.always) if (passes(e.guard, event)) return e;
    }
    return undefined;
  };
  /**
   * The transient transitions and raised done events after a microstep, until
   * the machine rests. Transient transitions are looked for again after a
   * raised event's step, and after a transient one only if it changed something.
   */
  const settle = (event: { type: string }): void => {
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
  /** Take the events waiting in the mailbox, one macrostep each. */
  const drain = (): void => {
    for (let e = mailbox.shift(); e !== undefined && status === "active"; e = mailbox.shift()) {
      microstep(select(e), e);
      settle(e);
    }
  };
  /** Run `work` as the machine's turn: events sent meanwhile wait in the mailbox; a throw fails the machine. */
  const turn = (work: () => void): void => {
    processing = true;
    try {
      work();
      if (status === "done") resolve(output as OutputFrom<TMachine>);
    } catch (error) {
      status = "error";
      mailbox.length = 0;
      reject(error);
    } finally {
      processing = false;
    }
  };

  const run: MachineRun<TMachine> = {
    send(event) {
      if (status !== "active") return;
      mailbox.push(event as { type: string });
      if (!processing) turn(drain);
    },
    output: done,
    get value() {
      return leaf.value;
    },
  };

  turn(() => {
    const init = { type: "xstate.init", input: options.input };
    const factory = (compiled.machine.config as { context?: unknown }).context;
    // A factory's context is copied as an `assign` would; a plain object is the context itself, as in xstate.
    context = typeof factory === "function" ? Object.assign({}, factory({ input: options.input, self, spawn: noSpawn })) : (factory ?? {});
    enterAll(compiled.initial.enter, init);
    leaf = compiled.initial.leaf;
    exitIfDone(init);
    settle(init);
    const initial = deferred ?? [];
    deferred = undefined;
    for (const action of initial) action();
    drain();
  });
  return run;
}

function noSpawn(): never {
  throw new Error("spawning actors is not supported by the machine interpreter (docs/design/engine.md#the-interpreter)");
}
