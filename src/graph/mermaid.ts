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
 * branch print as `<<choice>>`.
 */
export function machineToMermaid(machine: AnyStateMachine, title?: string): string {
  const lines = ["stateDiagram-v2"];
  if (title) lines.push(`%% ${title}`);
  printChildren(machine.root as unknown as Node, lines, "  ");
  return lines.join("\n") + "\n";
}

function printChildren(parent: Node, lines: string[], indent: string): void {
  const children = Object.values(parent.states);
  for (const child of children) {
    if (isChoice(child)) lines.push(`${indent}state ${child.key} <<choice>>`);
  }
  const initial = parent.initial?.target[0];
  if (initial) lines.push(`${indent}[*] --> ${name(initial)}`);
  for (const child of children) {
    if (child.type === "final") {
      if (!isStructuralEnd(child)) lines.push(`${indent}${child.key} --> [*]`);
      continue;
    }
    if (child.type === "compound" || child.type === "parallel") {
      lines.push(`${indent}state ${child.key} {`);
      printChildren(child, lines, indent + "  ");
      lines.push(`${indent}}`);
    }
    for (const t of transitionsOf(child)) {
      for (const target of t.target ?? []) {
        const label = labelOf(t);
        lines.push(`${indent}${child.key} --> ${isStructuralEnd(target) ? "[*]" : name(target)}${label ? ` : ${label}` : ""}`);
      }
    }
  }
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

function name(node: Node): string {
  return node.key;
}

function labelOf(t: Transition): string {
  const parts: string[] = [];
  const ev = t.eventType;
  if (ev.startsWith("xstate.done.actor")) parts.push("done");
  else if (ev.startsWith("xstate.error.actor")) parts.push("error");
  else if (ev && !ev.startsWith("xstate.done.state") && ev !== "") parts.push(ev);
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
