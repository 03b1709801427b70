import type { AnyStateMachine } from "xstate";

/** The parts of an XState v5 StateNode this printer reads. */
interface Node {
  key: string;
  id: string;
  type: "atomic" | "compound" | "parallel" | "final" | "history";
  states: Record<string, Node>;
  parent?: Node;
  initial?: { target: readonly Node[] };
  transitions: Map<string, readonly Transition[]>;
  always?: readonly Transition[];
}
interface Transition {
  eventType: string;
  target?: readonly Node[];
  guard?: unknown;
}

/**
 * Print a machine as a Mermaid `stateDiagram-v2`, generated from the
 * machine definition itself, so the drawing cannot drift from the code.
 * Structural final states (`DONE`, `EXIT`) print as `[*]`; named final
 * states (`COMPLETED`) print by name with an arrow to `[*]`; states that only
 * branch print as `<<choice>>`. Mermaid cannot draw an edge between states of
 * different composites, so such an edge is drawn between the composites that
 * hold them (AnalyzeProblem → ExecuteTool becomes PLANNING → SOLVING).
 */
export function machineToMermaid(machine: AnyStateMachine, title?: string): string {
  const root = machine.root as unknown as Node;
  const edges = collectEdges(root);
  const lines = ["stateDiagram-v2"];
  if (title) lines.push(`%% ${title}`);
  printChildren(root, edges, lines, "  ");
  return `${lines.join("\n")}\n`;
}

/** Edge lines grouped by the composite they are drawn in, deduplicated, in definition order. */
function collectEdges(root: Node): Map<Node, string[]> {
  const edges = new Map<Node, string[]>();
  const add = (where: Node, line: string) => {
    const list = edges.get(where) ?? [];
    if (!list.includes(line)) list.push(line);
    edges.set(where, list);
  };
  const visit = (node: Node) => {
    for (const child of Object.values(node.states)) {
      if (child.type === "final" && !isStructuralEnd(child)) add(node, `${child.key} --> [*]`);
      for (const t of transitionsOf(child)) {
        for (const target of t.target ?? []) {
          const { where, from, to } = lift(child, target);
          const label = labelOf(t);
          add(where, `${from.key} --> ${isStructuralEnd(to) ? "[*]" : to.key}${label ? ` : ${label}` : ""}`);
        }
      }
      visit(child);
    }
  };
  visit(root);
  return edges;
}

/** The composite an edge is drawn in, and its two ends lifted to that composite's children. */
function lift(source: Node, target: Node): { where: Node; from: Node; to: Node } {
  const ancestors = (n: Node) => {
    const out: Node[] = [];
    for (let p = n.parent; p; p = p.parent) out.push(p);
    return out;
  };
  const sourceUp = ancestors(source);
  const targetUp = new Set([target, ...ancestors(target)]);
  const where = sourceUp.find((a) => targetUp.has(a) && a !== target) ?? sourceUp[sourceUp.length - 1] ?? source;
  const childOf = (n: Node) => {
    let c = n;
    while (c.parent && c.parent !== where) c = c.parent;
    return c;
  };
  return { where, from: childOf(source), to: target === where ? childOf(source) : childOf(target) };
}

function printChildren(parent: Node, edges: Map<Node, string[]>, lines: string[], indent: string): void {
  const children = Object.values(parent.states);
  for (const child of children) {
    if (isChoice(child)) lines.push(`${indent}state ${child.key} <<choice>>`);
  }
  const initial = parent.initial?.target[0];
  if (initial) lines.push(`${indent}[*] --> ${initial.key}`);
  for (const child of children) {
    if (child.type === "compound" || child.type === "parallel") {
      lines.push(`${indent}state ${child.key} {`);
      printChildren(child, edges, lines, `${indent}  `);
      lines.push(`${indent}}`);
    }
  }
  for (const line of edges.get(parent) ?? []) lines.push(`${indent}${line}`);
}

function transitionsOf(node: Node): Transition[] {
  const out: Transition[] = [];
  for (const list of node.transitions.values()) out.push(...list);
  out.push(...(node.always ?? []));
  return out;
}

/** Final states that only mark "this region is done" and have no name in the diagrams. */
function isStructuralEnd(node: Node): boolean {
  return node.type === "final" && (node.key === "DONE" || node.key === "EXIT");
}

function isChoice(node: Node): boolean {
  return (node.always?.length ?? 0) > 1 && node.transitions.size === 0;
}

function labelOf(t: Transition): string {
  const parts: string[] = [];
  const ev = t.eventType;
  if (ev.startsWith("xstate.done.actor")) parts.push("done");
  else if (ev.startsWith("xstate.error.actor")) parts.push("error");
  else if (ev && !ev.startsWith("xstate.done.state")) parts.push(ev);
  const guard = guardName(t.guard);
  if (guard) parts.push(`[${guard}]`);
  return parts.join(" ");
}

function guardName(guard: unknown): string | undefined {
  if (!guard) return undefined;
  if (typeof guard === "string") return guard;
  if (typeof guard === "object" && guard !== null && "type" in guard) return String((guard as { type: unknown }).type);
  if (typeof guard === "function") return guard.name || "guard";
  return undefined;
}
