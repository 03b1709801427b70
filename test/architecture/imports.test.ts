/**
 * The shape of src/'s import graph: no import cycles, and every import goes
 * from an outer layer to an inner one (LAYERS below).
 *
 * Only value imports count, the ones that survive in the compiled JS:
 * `import type`, `export type` and imports whose every specifier is
 * `type X` are left out (tsc drops them). Dynamic `import("...")` counts.
 *
 * Imports are read from the .ts sources with regular expressions (comments
 * and template-literal text blanked first), so no build is needed.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

// ---------------------------------------------------------------------------
// The rule. A layer is a folder of src/ (or a file at its top). Each row says
// which other layers its modules may import (its own layer always). Read top
// to bottom: outer to inner. Adding a folder to src/ means adding a row here.
// ---------------------------------------------------------------------------

const ANYTHING = "anything";

/** Pure helpers without dependencies: every layer may import them. */
const LEAVES = ["parse", "errors.ts", "redact.ts", "lazy.ts", "built.ts", "xstate-bundle.ts", "ids.ts", "timestamp.ts"];

const LAYERS: Record<string, readonly string[] | typeof ANYTHING> = {
  // layer: the layers it may import
  "index.ts": ANYTHING, // the library entry: re-exports from everywhere
  cli: ["testing", "server", "queue", "store", "telemetry", "engine", "graph", "kinds", "models", "tools", "plan", "prompts", "trace", "events", "config", ...LEAVES],
  server: ["queue", "store", "telemetry", "engine", "graph", "kinds", "models", "tools", "plan", "prompts", "trace", "events", "config", ...LEAVES],
  queue: ["store", "telemetry", "engine", "kinds", "models", "tools", "plan", "trace", "events", "config", ...LEAVES], // runs taken from a PostgreSQL queue by workers
  store: ["plan", "events", ...LEAVES], // where runs are kept: one port per domain, SQLite and PostgreSQL adapters
  testing: ["engine", "models", "events", "config", ...LEAVES], // runtime test: agent test files run through runTeam
  engine: ["store", "kinds", "models", "tools", "plan", "prompts", "trace", "events", "config", ...LEAVES],
  graph: ["kinds", "models", "tools", "plan", "prompts", "events", "config", ...LEAVES], // draws the kinds' machines
  kinds: ["models", "tools", "plan", "prompts", "events", "config", ...LEAVES],
  models: ["events", "config", ...LEAVES],
  tools: ["events", "config", ...LEAVES],
  plan: ["events", "config", ...LEAVES],
  prompts: ["events", ...LEAVES],
  trace: ["events", ...LEAVES], // the trace store is a sink of events; events know no sink (engine wires them)
  telemetry: ["events", ...LEAVES], // OpenTelemetry spans from events: a sink the cli (or an application) wires
  events: [...LEAVES],
  config: ["prompts", ...LEAVES], // leaf-ish: loading a team checks its templates
  parse: ["errors.ts"], // tolerant JSON of model output
  "errors.ts": [],
  "redact.ts": [], // masking secrets: events, traces, messages, validation problems
  "lazy.ts": [], // CommonJS packages loaded on first use
  "built.ts": [], // what npm run build wrote for start-up to read: stamps and loading
  "xstate-bundle.ts": ["built.ts"], // xstate's functions, from the bundle the build wrote
  "ids.ts": [], // the ids runs are made with: time-ordered UUIDs
  "timestamp.ts": [], // the ts of events and journal entries, formatted once per millisecond
};

// ---------------------------------------------------------------------------
// Reading the import graph.
// ---------------------------------------------------------------------------

interface Edge {
  from: string; // path relative to src/, e.g. "kinds/react/run.ts"
  to: string;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

const KEYWORD_BEFORE_REGEX = /(?:^|[^\w$.])(?:return|typeof|case|do|else|in|of|void|yield|await|throw|delete|new)\s*$/;

/**
 * The source with comments, template-literal text and regex literals
 * blanked out (line breaks kept), so that the import patterns below only
 * see code and string literals.
 */
function codeOnly(source: string): string {
  const blank = (text: string) => text.replace(/[^\n]/g, " ");
  const n = source.length;
  let out = "";
  let i = 0;
  let braces = 0;
  /** For each `${` still open: the brace depth at which its `}` resumes the template. */
  const templates: number[] = [];
  /** The last code character that is not white space (regex literal or division?). */
  let last = "";
  /** Blank template text from `start` (just after "`" or "}") to its end or its next "${". */
  const templateText = (start: number) => {
    let j = start;
    while (j < n && source[j] !== "`" && !(source[j] === "$" && source[j + 1] === "{")) j += source[j] === "\\" ? 2 : 1;
    out += blank(source.slice(start, j));
    if (j < n && source[j] === "$") {
      templates.push(braces);
      out += "${";
      last = "{";
      return j + 2;
    }
    out += "`";
    last = "`";
    return j + 1;
  };
  while (i < n) {
    const c = source[i] as string;
    const next = source[i + 1];
    if (c === "/" && next === "/") {
      const end = source.indexOf("\n", i);
      const j = end < 0 ? n : end;
      out += blank(source.slice(i, j));
      i = j;
    } else if (c === "/" && next === "*") {
      const end = source.indexOf("*/", i + 2);
      const j = end < 0 ? n : end + 2;
      out += blank(source.slice(i, j));
      i = j;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < n && source[j] !== c && source[j] !== "\n") j += source[j] === "\\" ? 2 : 1;
      out += source.slice(i, j + 1);
      last = c;
      i = j + 1;
    } else if (c === "`") {
      out += "`";
      i = templateText(i + 1);
    } else if (c === "}" && templates.length > 0 && templates[templates.length - 1] === braces) {
      templates.pop();
      out += "}";
      i = templateText(i + 1);
    } else if (c === "/" && (/^$|[(,=:[!&|?{};+\-*%<>~^]/.test(last) || KEYWORD_BEFORE_REGEX.test(out))) {
      // A regex literal: up to the closing slash outside a character class.
      let j = i + 1;
      let inClass = false;
      while (j < n && source[j] !== "\n" && (inClass || source[j] !== "/")) {
        if (source[j] === "\\") j++;
        else if (source[j] === "[") inClass = true;
        else if (source[j] === "]") inClass = false;
        j++;
      }
      out += "/" + blank(source.slice(i + 1, j)) + "/";
      last = "/";
      i = j + 1;
    } else {
      if (c === "{") braces++;
      else if (c === "}") braces--;
      if (!/\s/.test(c)) last = c;
      out += c;
      i++;
    }
  }
  return out;
}

const NAME = String.raw`[\w$]+`;
/** What stands between `import`/`export` (and an optional `type`) and `from`. */
const CLAUSE = String.raw`\*(?:\s*as\s+${NAME})?|\{[^}]*\}|${NAME}(?:\s*,\s*(?:\{[^}]*\}|\*\s*as\s+${NAME}))?`;
/** `import X from "m"`, `import { a, type B } from "m"`, `export * from "m"`, `export type { T } from "m"`… */
const FROM = new RegExp(String.raw`(?:^|;)\s*(?:import|export)\s+(type\s+)?(${CLAUSE})\s*from\s*(["'])([^"'\n]+)\3`, "gm");
/** `import "m"` (for its side effects). */
const BARE = /(?:^|;)\s*import\s*(["'])([^"'\n]+)\1/gm;
/** `import("m")`. */
const DYNAMIC = /(?<![\w$.])import\s*\(\s*(["'])([^"'\n]+)\1\s*\)/g;

/** The module specifiers of a source's value imports (with `loaded: true`, only those loaded with it: not its `import()`s). */
function valueImports(source: string, options: { loaded?: boolean } = {}): string[] {
  const code = codeOnly(source);
  const specifiers: string[] = [];
  for (const m of code.matchAll(FROM)) {
    const [, typeOnly, clause = "", , specifier = ""] = m;
    if (typeOnly) continue;
    if (clause.startsWith("{")) {
      const names = clause
        .slice(1, -1)
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      if (names.length > 0 && names.every((s) => /^type\s+\S/.test(s))) continue;
    }
    specifiers.push(specifier);
  }
  for (const m of code.matchAll(BARE)) specifiers.push(m[2] ?? "");
  if (options.loaded) return specifiers;
  for (const m of code.matchAll(DYNAMIC)) {
    const before = code.slice(0, m.index);
    const after = code.slice(m.index + m[0].length);
    // `typeof import("m")` and `import("m").Type` are types.
    if (/\btypeof\s*$/.test(before)) continue;
    if (/^\s*\.\s*(?!(?:then|catch|finally)\b)[\w$]/.test(after)) continue;
    specifiers.push(m[2] ?? "");
  }
  return specifiers;
}

/** The .ts file a relative specifier names, or why it names none under src/. */
function resolveSpecifier(fromFile: string, specifier: string): string | "outside" | "missing" {
  const base = resolve(dirname(fromFile), specifier);
  if (relative(SRC, base).startsWith("..")) return "outside";
  const candidates = [base.replace(/\.js$/, ".ts"), `${base}.ts`, join(base, "index.ts")];
  const found = candidates.find((c) => c.endsWith(".ts") && existsSync(c));
  if (found) return found;
  return existsSync(base) ? "outside" : "missing"; // a non-TS file (page/app.js) is no module of the graph
}

const rel = (path: string) => relative(SRC, path).split(sep).join("/");

function readGraph(): { modules: string[]; edges: Edge[]; unresolved: string[] } {
  const files = sourceFiles(SRC).sort();
  const edges: Edge[] = [];
  const unresolved: string[] = [];
  for (const file of files) {
    for (const specifier of valueImports(readFileSync(file, "utf8"))) {
      if (!specifier.startsWith(".")) continue; // a package or node: built-in
      const target = resolveSpecifier(file, specifier);
      if (target === "missing") unresolved.push(`src/${rel(file)} imports "${specifier}", which is no file`);
      else if (target !== "outside") edges.push({ from: rel(file), to: rel(target) });
    }
  }
  return { modules: files.map(rel), edges, unresolved };
}

// ---------------------------------------------------------------------------
// Checks.
// ---------------------------------------------------------------------------

const layerOf = (module: string) => module.split("/")[0] as string;

function mayImport(from: string, to: string): boolean {
  if (from === to) return true;
  const allowed = LAYERS[from];
  return allowed === ANYTHING || (allowed?.includes(to) ?? false);
}

/** Each cycle among the strongly connected components of the graph, as a path "a → b → a". */
function cycles(modules: string[], edges: Edge[]): string[] {
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

describe("reading imports", () => {
  it("keeps value imports and drops type-only ones, as tsc does", () => {
    const source = [
      'import { a } from "./value.js";',
      'import D, { type T } from "./default.js";',
      'import * as ns from "./namespace.js";',
      'import "./side-effect.js";',
      'import {\n  type A,\n  b,\n} from "./multiline.js";',
      'export { c } from "./reexport.js";',
      'export * from "./star.js";',
      'import type { T } from "./type.js";',
      'import { type A, type B } from "./type-specifiers.js";',
      'export type { T } from "./export-type.js";',
      'export type * from "./export-type-star.js";',
      '// import { x } from "./line-comment.js";',
      '/* import("./block-comment.js") */',
      'const text = `import { y } from "./template.js"`;',
      'const re = /import "\\.\\/regex.js"/;',
      'let t: typeof import("./typeof.js");',
      'let u: import("./import-type.js").T;',
      'const lazy = await import("./dynamic.js");',
      'import("./then.js").then(() => {});',
    ].join("\n");
    expect(valueImports(source).sort()).toEqual(
      ["./default.js", "./dynamic.js", "./multiline.js", "./namespace.js", "./reexport.js", "./side-effect.js", "./star.js", "./then.js", "./value.js"].sort(),
    );
  });

  it("reports a cycle as the path round it", () => {
    const edges = [
      { from: "a.ts", to: "b.ts" },
      { from: "b.ts", to: "c.ts" },
      { from: "c.ts", to: "a.ts" },
      { from: "c.ts", to: "d.ts" },
    ];
    expect(cycles(["a.ts", "b.ts", "c.ts", "d.ts"], edges)).toEqual(["src/a.ts → src/b.ts → src/c.ts → src/a.ts"]);
  });
});

describe("src/ import graph", () => {
  const graph = readGraph();

  it("reads imports: every relative import names a file", () => {
    expect(graph.modules.length).toBeGreaterThan(0);
    expect(graph.edges.length).toBeGreaterThan(0);
    expect(graph.unresolved).toEqual([]);
  });

  it("has a row in LAYERS for every folder and top-level file of src/", () => {
    const unknown = [...new Set(graph.modules.map(layerOf))].filter((layer) => !(layer in LAYERS));
    expect(unknown, "add a row for each to LAYERS in test/architecture/imports.test.ts").toEqual([]);
  });

  it("has a layer table without cycles", () => {
    const names = Object.keys(LAYERS);
    const tableEdges = names.flatMap((from) => {
      const allowed = LAYERS[from];
      return allowed === ANYTHING ? [] : allowed?.map((to) => ({ from, to })) ?? [];
    });
    expect(cycles(names, tableEdges)).toEqual([]);
  });

  it("has no import cycle among src/ modules (value imports)", () => {
    expect(cycles(graph.modules, graph.edges), "import cycles, each as one path round it").toEqual([]);
  });

  it("imports only inward: each layer imports only the layers its LAYERS row names", () => {
    const violations = graph.edges
      .filter(({ from }) => layerOf(from) in LAYERS) // a module of no layer fails the test above
      .filter(({ from, to }) => !mayImport(layerOf(from), layerOf(to)))
      .map(({ from, to }) => `src/${from} → src/${to} (${layerOf(from)} may not import ${layerOf(to)})`);
    expect([...new Set(violations)], "imports that break the layering").toEqual([]);
  });

  it("store/ names nothing of kinds/ or trace/, not even a type; the PostgreSQL adapter, and a run given it, load nothing of SQLite", () => {
    const named = graph.modules
      .filter((m) => m.startsWith("store/"))
      .flatMap((m) => [...readFileSync(join(SRC, m), "utf8").matchAll(/from\s+"([^"]+)"|import\("([^"]+)"\)/g)].map((x) => ({ m, spec: x[1] ?? x[2] ?? "" })))
      .filter(({ m, spec }) => spec.startsWith(".") && /^(kinds|trace)\//.test(rel(resolve(dirname(join(SRC, m)), spec))))
      .map(({ m, spec }) => `src/${m} → ${spec}`);
    expect(named).toEqual([]);
    // Every module a PostgreSQL store loads (value imports, followed), and the packages they load.
    const store = loadedBy(graph.modules.filter((m) => m.startsWith("store/postgres/")), {});
    expect(store.modules.length).toBeGreaterThan(0);
    expect(store.modules.filter((m) => m.startsWith("store/sqlite/"))).toEqual([]);
    expect(store.packages.has("better-sqlite3")).toBe(false);
    expect(store.packages.has("pg")).toBe(true);
    // And the engine's path of a run given that store: runTeam loads the embedded store only for a run given none (import()).
    const run = loadedBy(["engine/run-team.ts"], { loaded: true });
    expect(run.modules).toContain("engine/agent-step.ts");
    expect(run.modules.filter((m) => m.startsWith("store/sqlite/"))).toEqual([]);
    expect(run.packages.has("better-sqlite3")).toBe(false);
  });
});

/** The modules `roots` load, followed through their value imports (with `loaded`, not through `import()`), and the packages among them. */
function loadedBy(roots: string[], options: { loaded?: boolean }): { modules: string[]; packages: Set<string> } {
  const seen = new Set<string>();
  const packages = new Set<string>();
  const queue = [...roots];
  while (queue.length > 0) {
    const m = queue.pop() as string;
    if (seen.has(m)) continue;
    seen.add(m);
    for (const spec of valueImports(readFileSync(join(SRC, m), "utf8"), options)) {
      if (!spec.startsWith(".")) packages.add(spec);
      else {
        const target = resolveSpecifier(join(SRC, m), spec);
        if (target !== "missing" && target !== "outside") queue.push(rel(target));
      }
    }
  }
  return { modules: [...seen], packages };
}
