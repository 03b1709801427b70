/**
 * A lean interpreter for the machines on a run's hot path
 * (docs/design/engine.md#the-interpreter). The machines stay XState
 * definitions, state for state as the seed diagrams draw them, and xstate's
 * `createActor` remains the reference: test/graph/machine-interpreter.test.ts runs
 * machines through both and compares them microstep by microstep.
 *
 * What it saves: xstate works out the exit and entry sets of every microstep
 * from the active state nodes (SCXML's algorithm, for any statechart), builds
 * a new snapshot and state value each time and sends inspection events. Here
 * the sets are worked out once per (active state, transition) pair and kept;
 * a microstep runs the actions and moves one reference. `node
 * bench/machine.mjs` runs the react machine alone both ways: ~90 µs of CPU a
 * recursion under xstate's actor, ~8 under this (docs/performance.md).
 *
 * It runs the part of XState those machines use: compound, atomic and final
 * states; `on`, `always` and `onDone` transitions with one target or none,
 * guarded (inline or named, with params) or not, `reenter`; entry and exit
 * actions, `assign` or the machine's own (inline or named, with params),
 * those of the initial states deferred to the start as an actor defers them;
 * `context` from the input; final states' and the machine's `output`. A
 * machine that declares more is refused when it is compiled
 * (`UnsupportedMachine`) and must run with `createActor`: parallel or history
 * states, `invoke`, `after`, wildcard events, several targets, built-in
 * actions other than `assign` (`raise`, `sendTo`, `spawnChild`, ...),
 * built-in guards (`and`, `stateIn`, ...), actions on an `initial`
 * transition, a final root, `maxIterations`. What compiling cannot see is
 * the machine's own code: actions get a `self` that only sends, no `system`,
 * and `spawn` throws.
 */
import type { AnyStateMachine, EventFromLogic, InputFrom, OutputFrom } from "xstate";

/** A machine the interpreter does not run, and why. */
export class UnsupportedMachine extends Error {
  constructor(machine: string, why: string) {
    super(`machine ${machine}: ${why}; run it with xstate's createActor`);
    this.name = "UnsupportedMachine";
  }
}

/** xstate's state node, as far as it is read here (its fields are public, some marked internal). */
interface XNode {
  id: string;
  type: "atomic" | "compound" | "parallel" | "final" | "history";
  path: string[];
  order: number;
  parent?: XNode;
  states: Record<string, XNode>;
  entry: unknown[];
  exit: unknown[];
  transitions: Map<string, XTransition[]>;
  always?: XTransition[];
  invoke: unknown[];
  after: unknown[];
  initial: { target: XNode[]; actions: unknown[] };
  output?: unknown;
}

interface XTransition {
  target?: XNode[];
  source: XNode;
  reenter: boolean;
  guard?: unknown;
  actions: unknown[];
}

type Implementation = (args: Record<string, unknown>, params: unknown) => unknown;
type Params = ((args: { context: unknown; event: unknown }) => unknown) | { value: unknown } | undefined;

/** An action, resolved once: an assignment, or a function to call. */
interface Action {
  assign: boolean;
  fn: Implementation;
  params: Params;
}

interface Guard {
  name: string | undefined;
  fn: Implementation;
  params: Params;
}

interface State {
  x: XNode;
  /** The state value while this is the active leaf, dotted (`RECURSION.CALL_LLM.OBSERVE`). */
  value: string;
  parent: State | undefined;
  final: boolean;
  entry: Action[];
  exit: Action[];
  /** Transitions by event type, this node's own. */
  on: Map<string, Edge[]>;
  always: Edge[] | undefined;
  /** The leaf first, then its ancestors up to the root. */
  chain: State[];
}

interface Edge {
  x: XTransition;
  source: State;
  guard: Guard | undefined;
  actions: Action[];
  /** The exit and entry sets from each active leaf, worked out on first use. */
  moves: Map<State, Move> | undefined;
}

interface Move {
  exit: State[];
  enter: State[];
  leaf: State;
}

/** A machine ready to run: its states, transitions and actions resolved once. */
export interface CompiledMachine<TMachine extends AnyStateMachine = AnyStateMachine> {
  readonly machine: TMachine;
}

interface Compiled extends CompiledMachine {
  readonly states: ReadonlyMap<XNode, State>;
  readonly root: State;
  /** Entered at start: the root and its initial descendants. */
  readonly initial: Move;
}

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
 * Resolve a machine's nodes, transitions, actions and guards once; throws
 * `UnsupportedMachine` for a machine that uses more of XState than this runs.
 */
export function compileMachine<TMachine extends AnyStateMachine>(machine: TMachine): CompiledMachine<TMachine> {
  const id = machine.id;
  const implementations = machine.implementations as { actions: Record<string, unknown>; guards: Record<string, unknown> };
  const refuse = (why: string): never => {
    throw new UnsupportedMachine(id, why);
  };

  const params = (ref: unknown): Params => {
    if (typeof ref !== "object" || ref === null || !("params" in ref)) return undefined;
    const p = (ref as { params: unknown }).params;
    return typeof p === "function" ? (p as Params) : { value: p };
  };
  const action = (ref: unknown, where: string): Action => {
    const inline = typeof ref === "function";
    const name = nameOf(ref);
    if (!inline && name === undefined) return refuse(`an action of ${where} is neither a function nor a name`);
    const fn = inline ? ref : implementations.actions[name!];
    if (typeof fn !== "function") return refuse(`action '${name}' of ${where} is not implemented`);
    const builtin = "resolve" in fn ? String((fn as { type?: unknown }).type) : undefined;
    if (builtin !== undefined && builtin !== "xstate.assign") return refuse(`${where} uses the built-in action ${builtin}`);
    const assignment = builtin ? (fn as unknown as { assignment: unknown }).assignment : undefined;
    if (builtin && typeof assignment !== "function") {
      // assign({ key: value | fn }): each key resolved in turn, as xstate does.
      const entries = Object.entries(assignment as Record<string, unknown>);
      const fromObject: Implementation = (args, p) =>
        Object.fromEntries(entries.map(([key, v]) => [key, typeof v === "function" ? (v as Implementation)(args, p) : v]));
      return { assign: true, fn: fromObject, params: inline ? undefined : params(ref) };
    }
    return { assign: builtin !== undefined, fn: (assignment ?? fn) as Implementation, params: inline ? undefined : params(ref) };
  };
  const guard = (ref: unknown, where: string): Guard | undefined => {
    if (ref === undefined) return undefined;
    const inline = typeof ref === "function";
    const name = nameOf(ref);
    if (!inline && name === undefined) return refuse(`a guard of ${where} is neither a function nor a name`);
    const fn = inline ? ref : implementations.guards[name!];
    if (typeof fn !== "function") return refuse(`guard '${name}' of ${where} is not implemented as a function`);
    if ("check" in fn) return refuse(`${where} uses a built-in guard`);
    return { name, fn: fn as Implementation, params: inline ? undefined : params(ref) };
  };

  if ((machine.options as { maxIterations?: number }).maxIterations !== Infinity) refuse("it sets maxIterations");
  if ((machine.root as unknown as XNode).type === "final") refuse("its root is a final state");
  const nodes = new Map<XNode, State>();
  const visit = (x: XNode, parent: State | undefined): State => {
    const where = `state ${x.id}`;
    if (x.type === "parallel" || x.type === "history") refuse(`${where} is a ${x.type} state`);
    if (x.invoke.length > 0) refuse(`${where} invokes an actor`);
    if (x.after.length > 0) refuse(`${where} has delayed transitions`);
    if (x.type === "compound" && x.initial.actions.length > 0) refuse(`${where} has actions on its initial transition`);
    const node: State = {
      x,
      value: x.path.join("."),
      parent,
      final: x.type === "final",
      entry: x.entry.map((a) => action(a, where)),
      exit: x.exit.map((a) => action(a, where)),
      on: new Map(),
      always: undefined,
      chain: [],
    };
    node.chain = parent ? [node, ...parent.chain] : [node];
    nodes.set(x, node);
    for (const child of Object.values(x.states ?? {})) visit(child, node);
    return node;
  };
  const root = visit(machine.root as unknown as XNode, undefined);
  const edge = (t: XTransition, source: State, where: string): Edge => ({
    x: (t.target?.length ?? 0) > 1 ? refuse(`${where} has several targets`) : t,
    source,
    guard: guard(t.guard, where),
    actions: t.actions.map((a) => action(a, where)),
    moves: t.target?.length ? new Map() : undefined,
  });
  for (const node of nodes.values()) {
    for (const [type, transitions] of node.x.transitions) {
      if (type.includes("*")) refuse(`state ${node.x.id} has a wildcard transition '${type}'`);
      if (type === "xstate.route") refuse(`state ${node.x.id} has routes`);
      node.on.set(type, transitions.map((t) => edge(t, node, `the '${type}' transition of state ${node.x.id}`)));
    }
    if (node.x.always) node.always = node.x.always.map((t) => edge(t, node, `an 'always' transition of state ${node.x.id}`));
  }
  const enter: State[] = [];
  for (let n: State | undefined = root; n; n = n.x.type === "compound" ? nodes.get(n.x.initial.target[0]!) : undefined) enter.push(n);
  const compiled: Compiled = { machine, states: nodes, root, initial: { exit: [], enter, leaf: enter[enter.length - 1]! } };
  return compiled as unknown as CompiledMachine<TMachine>;
}

/** The name of a named action or guard (`"name"` or `{ type: "name", params }`). */
function nameOf(ref: unknown): string | undefined {
  if (typeof ref === "string") return ref;
  const type = typeof ref === "object" && ref !== null ? (ref as { type?: unknown }).type : undefined;
  return typeof type === "string" ? type : undefined;
}

/** xstate's `isDescendant`: strictly below `parent`; everything is below `undefined`. */
function isDescendant(child: XNode, parent: XNode | undefined): boolean {
  let marker = child;
  while (marker.parent && marker.parent !== parent) marker = marker.parent;
  return marker.parent === parent;
}

/** The exit and entry sets of `edge` taken from `leaf` (SCXML's, as xstate computes them, for one region). */
function moveOf(compiled: Compiled, edge: Edge, leaf: State): Move {
  const t = edge.x;
  const source = t.source;
  const targets = t.target!;
  let domain: XNode | undefined;
  if (!t.reenter && targets.every((s) => s === source || isDescendant(s, source))) domain = source;
  else {
    const [head, ...tail] = [...targets, source];
    for (let a = head!.parent; a && !domain; a = a.parent) if (tail.every((s) => isDescendant(s, a!))) domain = a;
    if (!domain && !t.reenter) domain = compiled.root.x;
  }

  const exit = new Set<XNode>();
  if (t.reenter && source === domain) exit.add(domain);
  for (const n of leaf.chain) if (isDescendant(n.x, domain)) exit.add(n.x);

  const enter = new Set<XNode>();
  const descend = (s: XNode): void => {
    if (s.type !== "compound") return;
    const first = s.initial.target[0]!;
    enter.add(first);
    descend(first);
  };
  for (const s of targets) {
    if (s !== source || source !== domain || t.reenter) enter.add(s);
    descend(s);
  }
  const reentrancy = !source.parent && t.reenter ? undefined : domain;
  for (const s of targets) {
    for (let a = s.parent; a && a !== domain; a = a.parent) if (!reentrancy || isDescendant(a, reentrancy)) enter.add(a);
  }

  const active = new Set(leaf.chain.map((n) => n.x).filter((x) => !exit.has(x)));
  for (const x of enter) active.add(x);
  const deepest = [...active].reduce((a, b) => (b.path.length > a.path.length ? b : a));
  const node = (x: XNode): State => compiled.states.get(x)!;
  return {
    exit: [...exit].sort((a, b) => b.order - a.order).map(node),
    enter: [...enter].sort((a, b) => a.order - b.order).map(node),
    leaf: node(deepest),
  };
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
      if (status === "done") for (const n of leaf.chain) execute(n.exit, event);
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
    if (status === "done") for (const n of leaf.chain) execute(n.exit, init);
    settle(init);
    const initial = deferred ?? [];
    deferred = undefined;
    for (const action of initial) action();
    drain();
  });
  return run;
}

function noSpawn(): never {
  throw new Error("spawning actors is not supported by the interpreter (src/machine-interpreter.ts)");
}
