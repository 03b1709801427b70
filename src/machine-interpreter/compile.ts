/**
 * The interpreter's first half (docs/design/engine.md#the-interpreter):
 * an XState machine's definition resolved once, its states, transitions,
 * actions and guards, and each transition's exit and entry sets from a given
 * state worked out on first use by xstate's rules. What it refuses, and why,
 * is in ./index.ts. What it exports besides compileMachine,
 * UnsupportedMachine and CompiledMachine is for ./run.ts only.
 */
import type { AnyStateMachine } from "xstate";

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

export type Implementation = (args: Record<string, unknown>, params: unknown) => unknown;
export type Params = ((args: { context: unknown; event: unknown }) => unknown) | { value: unknown } | undefined;

/** An action, resolved once: an assignment, or a function to call. */
export interface Action {
  assign: boolean;
  fn: Implementation;
  params: Params;
}

export interface Guard {
  name: string | undefined;
  fn: Implementation;
  params: Params;
}

export interface State {
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

export interface Edge {
  x: XTransition;
  source: State;
  guard: Guard | undefined;
  actions: Action[];
  /** The exit and entry sets from each active leaf, worked out on first use. */
  moves: Map<State, Move> | undefined;
}

export interface Move {
  exit: State[];
  enter: State[];
  leaf: State;
}

/** A machine ready to run: its states, transitions and actions resolved once. */
export interface CompiledMachine<TMachine extends AnyStateMachine = AnyStateMachine> {
  readonly machine: TMachine;
}

export interface Compiled extends CompiledMachine {
  readonly states: ReadonlyMap<XNode, State>;
  readonly root: State;
  /** Entered at start: the root and its initial descendants. */
  readonly initial: Move;
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
export function moveOf(compiled: Compiled, edge: Edge, leaf: State): Move {
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
