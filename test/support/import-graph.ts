/**
 * src/'s import graph, read from the .ts sources with TypeScript's own parser
 * (no build needed), and the cycles in a graph: what
 * test/architecture/imports.test.ts (layering) and
 * test/architecture/cycles.test.ts (no cycle) check.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

export const SRC = fileURLToPath(new URL("../../src", import.meta.url));

export interface Edge {
  from: string; // path relative to src/, e.g. "kinds/react/run.ts"
  to: string;
  typeOnly: boolean;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

interface Import {
  specifier: string;
  /** Erased by tsc: `import type`, `export type`, every specifier `type X`, `typeof import("m")`, `import("m").T`. */
  typeOnly: boolean;
  /** An `import()` call: loaded when the call runs, not with the module. */
  dynamic?: boolean;
}

/** Every import of a source, as TypeScript's own parser reads it: static, re-exports, dynamic `import()` and import types. */
export function imports(fileName: string, source: string): Import[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: Import[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const bindings = clause?.namedBindings;
      const everyNameIsType =
        !!clause && !clause.name && !!bindings && ts.isNamedImports(bindings) && bindings.elements.length > 0 && bindings.elements.every((e) => e.isTypeOnly);
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: !!clause?.isTypeOnly || everyNameIsType });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.exportClause;
      const everyNameIsType = !!clause && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly);
      found.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly || everyNameIsType });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument && ts.isStringLiteralLike(argument)) found.push({ specifier: argument.text, typeOnly: false, dynamic: true });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      found.push({ specifier: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/**
 * The specifiers of a source's value imports, the ones tsc keeps in the
 * compiled JS; with `loaded`, only those loaded with the module (not its `import()`s).
 */
export function valueImports(source: string, fileName = "module.ts", options: { loaded?: boolean } = {}): string[] {
  return imports(fileName, source)
    .filter((i) => !i.typeOnly && !(options.loaded && i.dynamic))
    .map((i) => i.specifier);
}

/** The .ts file a relative specifier names, or why it names none under src/. */
export function resolveSpecifier(fromFile: string, specifier: string): string | "outside" | "missing" {
  const base = resolve(dirname(fromFile), specifier);
  if (relative(SRC, base).startsWith("..")) return "outside";
  const candidates = [base.replace(/\.js$/, ".ts"), `${base}.ts`, join(base, "index.ts")];
  const found = candidates.find((c) => c.endsWith(".ts") && existsSync(c));
  if (found) return found;
  return existsSync(base) ? "outside" : "missing"; // a non-TS file (page/app.js) is no module of the graph
}

export const rel = (path: string) => relative(SRC, path).split(sep).join("/");

export function readGraph(): { modules: string[]; edges: Edge[]; unresolved: string[] } {
  const files = sourceFiles(SRC).sort();
  const edges: Edge[] = [];
  const unresolved: string[] = [];
  for (const file of files) {
    for (const { specifier, typeOnly } of imports(file, readFileSync(file, "utf8"))) {
      if (!specifier.startsWith(".")) continue; // a package or node: built-in
      const target = resolveSpecifier(file, specifier);
      if (target === "missing") unresolved.push(`src/${rel(file)} imports "${specifier}", which is no file`);
      else if (target !== "outside") edges.push({ from: rel(file), to: rel(target), typeOnly });
    }
  }
  return { modules: files.map(rel), edges, unresolved };
}

/** Each cycle among the strongly connected components of the graph, as a path "a → b → a". */
export function cycles(modules: string[], edges: Edge[]): string[] {
  const next = new Map<string, string[]>(modules.map((m) => [m, []]));
  for (const { from, to } of edges) if (!next.get(from)?.includes(to)) next.get(from)?.push(to);

  // Tarjan's strongly connected components (iterative: no recursion limit).
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  let counter = 0;
  for (const root of modules) {
    if (index.has(root)) continue;
    const work: { node: string; child: number }[] = [{ node: root, child: 0 }];
    index.set(root, counter);
    low.set(root, counter++);
    stack.push(root);
    onStack.add(root);
    while (work.length > 0) {
      const frame = work[work.length - 1] as { node: string; child: number };
      const children = next.get(frame.node) ?? [];
      if (frame.child < children.length) {
        const child = children[frame.child++] as string;
        if (!index.has(child)) {
          index.set(child, counter);
          low.set(child, counter++);
          stack.push(child);
          onStack.add(child);
          work.push({ node: child, child: 0 });
        } else if (onStack.has(child)) {
          low.set(frame.node, Math.min(low.get(frame.node) as number, index.get(child) as number));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node) as number, low.get(frame.node) as number));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop() as string;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        const selfLoop = next.get(frame.node)?.includes(frame.node) ?? false;
        if (component.length > 1 || selfLoop) components.push(component.sort());
      }
    }
  }

  // For each component, the shortest cycle through its first module (breadth first).
  return components.map((component) => {
    const start = component[0] as string;
    const inside = new Set(component);
    const cameFrom = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const node = queue.shift() as string;
      for (const child of next.get(node) ?? []) {
        if (!inside.has(child)) continue;
        if (child === start) {
          const path = [start];
          for (let at: string | undefined = node; at !== undefined && at !== start; at = cameFrom.get(at)) path.unshift(at);
          path.unshift(start);
          const more = component.length > path.length - 1 ? ` (cycle among ${component.length} modules: ${component.join(", ")})` : "";
          return path.map((m) => `src/${m}`).join(" → ") + more;
        }
        if (!cameFrom.has(child)) {
          cameFrom.set(child, node);
          queue.push(child);
        }
      }
    }
    return component.join(", ");
  });
}
