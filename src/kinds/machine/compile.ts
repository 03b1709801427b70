/**
 * The runner's first half (docs/design/kinds.md#the-runner): a machine's
 * states, transitions, actions, guards and invocations read once from
 * xstate's public state nodes, and each transition's exit and entry sets from
 * a given state worked out on first use by xstate's rules. Named actions,
 * guards and actors are looked up when a run starts (./interpret.ts), so one
 * compiled machine serves every step, each with its own implementations.
 */
import type { AnyStateMachine, StateNode, TransitionDefinition } from "xstate";
import { unreachable } from "../../errors.js";
import { type Assignment, assignmentOf } from "./kit.js";

type XNode = StateNode;
type XTransition = TransitionDefinition<never, never>;
type Mapper = (args: { context: unknown; event: unknown; self: unknown }) => unknown;

/** An action's params: a mapper over the context and event, or a value. */
export type Params = ((args: { context: unknown; event: unknown }) => unknown) | { value: unknown } | undefined;

/** A reference to an action or a guard: inline (resolved here) or by name (resolved per run). */
export interface Ref {
  name: string | undefined;
  inline: unknown;
  params: Params;
}

export interface Invocation {
  id: string;
  src: string | object;
  input: Mapper | undefined;
}

export interface State {
  x: XNode;
  /** The state value while this is the active leaf, dotted (`RECURSION.CALL_LLM.OBSERVE`). */
  value: string;
  parent: State | undefined;
  final: boolean;
  entry: Ref[];
  exit: Ref[];
  invoke: Invocation[];
  /** Transitions by event type, this node's own. */
  on: Map<string, Edge[]>;
  always: Edge[] | undefined;
  /** The leaf first, then its ancestors up to the root. */
  chain: State[];
}

export interface Edge {
  x: XTransition;
  source: State;
  guard: Ref | undefined;
  actions: Ref[];
  /** The exit and entry sets from each active leaf, worked out on first use. */
  moves: Map<State, Move> | undefined;
}

export interface Move {
  exit: State[];
  enter: State[];
  leaf: State;
}

export interface Compiled {
  readonly machine: AnyStateMachine;
  readonly states: ReadonlyMap<XNode, State>;
  readonly root: State;
  /** Entered at start: the root and its initial descendants. */
  readonly initial: Move;
}

const compiledMachines = new WeakMap<AnyStateMachine, Compiled>();

/** A machine compiled once; a machine that uses more of xstate than the runner runs is a bug, refused with the reason. */
export function compile(machine: AnyStateMachine): Compiled {
  let compiled = compiledMachines.get(machine);
  if (compiled === undefined) compiledMachines.set(machine, (compiled = compileMachine(machine)));
  return compiled;
}

function compileMachine(machine: AnyStateMachine): Compiled {
  const refuse = (why: string): never => unreachable(`machine ${machine.id}: ${why} (docs/design/kinds.md#the-runner)`);
  const ref = (r: unknown, where: string): Ref => {
    if (typeof r === "function") return { name: undefined, inline: r, params: undefined };
    const name = typeof r === "string" ? r : typeof r === "object" && r !== null ? (r as { type?: unknown }).type : undefined;
    if (typeof name !== "string") return refuse(`an action or guard of ${where} is neither a function nor a name`);
    const p = typeof r === "object" && r !== null && "params" in r ? (r as { params: unknown }).params : undefined;
    return { name, inline: undefined, params: p === undefined ? undefined : typeof p === "function" ? (p as Params) : { value: p } };
  };

  const nodes = new Map<XNode, State>();
  const visit = (x: XNode, parent: State | undefined): State => {
    const where = `state ${x.id}`;
    if (x.type === "parallel" || x.type === "history") refuse(`${where} is a ${x.type} state`);
    if (x.after.length > 0) refuse(`${where} has delayed transitions`);
    if (x.type === "compound" && x.initial.actions.length > 0) refuse(`${where} has actions on its initial transition`);
    const node: State = {
      x,
      value: x.path.join("."),
      parent,
      final: x.type === "final",
      entry: x.entry.map((a) => ref(a, where)),
      exit: x.exit.map((a) => ref(a, where)),
      invoke: x.invoke.map((i) => ({ id: i.id, src: i.src as string | object, input: i.input as Mapper | undefined })),
      on: new Map(),
      always: undefined,
      chain: [],
    };
    node.chain = parent ? [node, ...parent.chain] : [node];
    nodes.set(x, node);
    for (const child of Object.values(x.states)) visit(child as XNode, node);
    return node;
  };
  if (machine.root.type === "final") refuse("its root is a final state");
  const root = visit(machine.root, undefined);
  const edge = (t: XTransition, source: State, where: string): Edge => ({
    x: (t.target?.length ?? 0) > 1 ? refuse(`${where} has several targets`) : t,
    source,
    guard: t.guard === undefined ? undefined : ref(t.guard, where),
    actions: (t.actions ?? []).map((a) => ref(a, where)),
    moves: t.target?.length ? new Map() : undefined,
  });
  for (const node of nodes.values()) {
    for (const [type, transitions] of node.x.transitions) {
      if (type.includes("*")) refuse(`state ${node.x.id} has a wildcard transition '${type}'`);
      node.on.set(
        type,
        transitions.map((t) => edge(t as XTransition, node, `the '${type}' transition of state ${node.x.id}`)),
      );
    }
    if (node.x.always) node.always = node.x.always.map((t) => edge(t as XTransition, node, `an 'always' transition of state ${node.x.id}`));
  }
  const enter: State[] = [];
  for (let n: State | undefined = root; n; n = n.x.type === "compound" ? nodes.get(n.x.initial.target[0]!) : undefined) enter.push(n);
  return { machine, states: nodes, root, initial: { exit: [], enter, leaf: enter[enter.length - 1]! } };
}

/** An action ready to run: an assignment, or a function to call. */
export interface Action {
  assignment: Assignment | undefined;
  fn: (args: object, params: unknown) => unknown;
}

/** An action's implementation, inline or named (the run's own first, then the machine's). */
export function actionOf(r: Ref, named: Record<string, unknown>, machine: AnyStateMachine): Action {
  const fn = r.inline ?? named[r.name!] ?? machine.implementations.actions[r.name!];
  if (typeof fn !== "function") return unreachable(`machine ${machine.id}: action '${r.name}' is not implemented`);
  return { assignment: assignmentOf(fn), fn: fn as Action["fn"] };
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
  const source = edge.source.x;
  const targets = t.target as unknown as XNode[];
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
    const first = s.initial.target[0] as XNode;
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
