/**
 * The layering of src/'s import graph: every import goes from an outer layer
 * to an inner one (LAYERS below), type-only ones (`import type`, `import("m").T`)
 * included: a value import follows its layer's row, a type-only one its row or
 * its TYPES row, and the table with both stays acyclic, so no arrow points up.
 * No cycle between modules either: test/architecture/cycles.test.ts.
 * The graph is read by test/support/import-graph.ts.
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import ts from "typescript";
import { cycles, readGraph, rel, resolveSpecifier, SRC, valueImports } from "../support/import-graph.js";

// ---------------------------------------------------------------------------
// The rule. A layer is a folder of src/ (or a file at its top). Each row says
// which other layers its modules may import (its own layer always). Read top
// to bottom: outer to inner. Adding a folder to src/ means adding a row here.
// ---------------------------------------------------------------------------

const ANYTHING = "anything";

/** Pure helpers without dependencies: every layer may import them. */
const LEAVES = ["parse", "errors.ts", "redact.ts", "lazy.ts", "built.ts", "ids.ts", "retry.ts"];

const LAYERS: Record<string, readonly string[] | typeof ANYTHING> = {
  // layer: the layers it may import
  "index.ts": ANYTHING, // the library entry: re-exports from everywhere
  cli: [
    "testing",
    "server",
    "queue",
    "store",
    "telemetry",
    "engine",
    "graph",
    "kinds",
    "models",
    "tools",
    "plan",
    "prompts",
    "trace",
    "events",
    "config",
    ...LEAVES,
  ],
  server: ["queue", "store", "telemetry", "engine", "graph", "kinds", "models", "tools", "plan", "prompts", "trace", "events", "config", ...LEAVES],
  queue: ["store", "telemetry", "engine", "kinds", "models", "tools", "plan", "trace", "events", "config", ...LEAVES], // runs taken from a PostgreSQL queue by workers
  store: ["plan", "events", ...LEAVES], // where runs are kept: one port per domain, SQLite and PostgreSQL adapters
  testing: ["engine", "guardrails", "models", "events", "config", ...LEAVES], // runtime test: agent test files run through runTeam
  engine: ["store", "guardrails", "kinds", "models", "tools", "plan", "prompts", "trace", "events", "config", ...LEAVES],
  guardrails: ["kinds", "models", "tools", "events", "config", ...LEAVES], // checks on what goes into and out of agents and tools (docs/guardrails.md)
  graph: ["kinds", "models", "tools", "plan", "prompts", "events", "config", ...LEAVES], // draws the kinds' machines
  kinds: ["models", "tools", "plan", "prompts", "events", "config", ...LEAVES],
  models: ["events", "config", ...LEAVES],
  tools: ["events", "config", ...LEAVES],
  plan: ["events", "config", ...LEAVES],
  prompts: ["events", ...LEAVES],
  trace: ["events", ...LEAVES], // the trace store is a sink of events; events know no sink (engine wires them)
  telemetry: ["events", ...LEAVES], // OpenTelemetry spans from events: a sink the cli (or an application) wires
  events: [...LEAVES],
  config: ["prompts", "events", ...LEAVES], // leaf-ish: loading a team checks its templates; a guardrail's `on` is the events' word
  parse: ["errors.ts"], // tolerant JSON of model output
  "errors.ts": [],
  "redact.ts": [], // masking secrets: events, traces, messages, validation problems
  "lazy.ts": [], // CommonJS packages loaded on first use
  "built.ts": [], // what npm run build wrote for start-up to read: stamps
  "ids.ts": [], // the ids runs are made with: time-ordered UUIDs
  "retry.ts": [], // trying again: one curve, named policies
};

/**
 * Layers whose types (only) a layer may name besides its row: the ports and
 * shapes it is handed, never loaded. Arrows all the same: the table with them
 * stays acyclic.
 */
const TYPES: Record<string, readonly string[]> = {
  kinds: ["store"], // the conversations and todo sessions a step is handed (AgentContext.stores)
  plan: ["tools"], // the Plan Tool's tools are `Tool`s
  tools: ["models"], // a tool's spec and the call it answers are the model's words
  trace: ["store"], // a trace tree of stored runs, a comparison of journal entries
  telemetry: ["config"], // the team names each model's provider
};

// ---------------------------------------------------------------------------
// Checks.
// ---------------------------------------------------------------------------

const layerOf = (module: string) => module.split("/")[0] as string;

function mayImport(from: string, to: string, typeOnly = false): boolean {
  if (from === to) return true;
  const allowed = LAYERS[from];
  return allowed === ANYTHING || (allowed?.includes(to) ?? false) || (typeOnly && (TYPES[from]?.includes(to) ?? false));
}

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

  it("has a layer table without cycles, its TYPES rows included", () => {
    const names = Object.keys(LAYERS);
    const tableEdges = names.flatMap((from) => {
      const allowed = LAYERS[from];
      const rows = [...(allowed === ANYTHING ? [] : (allowed ?? [])), ...(TYPES[from] ?? [])];
      return rows.map((to) => ({ from, to, typeOnly: false }));
    });
    expect(Object.keys(TYPES).filter((layer) => !(layer in LAYERS))).toEqual([]);
    expect(cycles(names, tableEdges)).toEqual([]);
  });

  it("imports only inward: each layer imports only the layers its LAYERS row names (value imports)", () => {
    const violations = graph.edges
      .filter(({ typeOnly }) => !typeOnly)
      .filter(({ from }) => layerOf(from) in LAYERS) // a module of no layer fails the test above
      .filter(({ from, to }) => !mayImport(layerOf(from), layerOf(to)))
      .map(({ from, to }) => `src/${from} → src/${to} (${layerOf(from)} may not import ${layerOf(to)})`);
    expect([...new Set(violations)], "imports that break the layering").toEqual([]);
  });

  it("engine/ names no store adapter, not even a type: it takes a Store, and the composition root (src/store/create.ts) chooses the adapter", () => {
    const named = graph.edges
      .filter(({ from, to }) => from.startsWith("engine/") && /^store\/(sqlite|postgres)\//.test(to))
      .map(({ from, to }) => `src/${from} → src/${to}`);
    expect([...new Set(named)]).toEqual([]);
  });

  it("points every arrow down, types included: a type-only import names only the layers its LAYERS or TYPES row names", () => {
    const up = graph.edges
      .filter(({ typeOnly }) => typeOnly)
      .filter(({ from }) => layerOf(from) in LAYERS)
      .filter(({ from, to }) => !mayImport(layerOf(from), layerOf(to), true))
      .map(({ from, to }) => `src/${from} → src/${to} (${layerOf(from)} may not name the types of ${layerOf(to)})`);
    expect([...new Set(up)], "type arrows that point up; move the types both need to the lower layer").toEqual([]);
  });

  it("store/ names nothing of kinds/ or trace/, not even a type; the PostgreSQL adapter, and a run given it, load nothing of SQLite", () => {
    const named = graph.modules
      .filter((m) => m.startsWith("store/"))
      .flatMap((m) => [...readFileSync(join(SRC, m), "utf8").matchAll(/from\s+"([^"]+)"|import\("([^"]+)"\)/g)].map((x) => ({ m, spec: x[1] ?? x[2] ?? "" })))
      .filter(({ m, spec }) => spec.startsWith(".") && /^(kinds|trace)\//.test(rel(resolve(dirname(join(SRC, m)), spec))))
      .map(({ m, spec }) => `src/${m} → ${spec}`);
    expect(named).toEqual([]);
    // Every module a PostgreSQL store loads (value imports, followed), and the packages they load.
    const store = loadedBy(
      graph.modules.filter((m) => m.startsWith("store/postgres/")),
      {},
    );
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
    for (const spec of valueImports(readFileSync(join(SRC, m), "utf8"), m, options)) {
      if (!spec.startsWith(".")) packages.add(spec);
      else {
        const target = resolveSpecifier(join(SRC, m), spec);
        if (target !== "missing" && target !== "outside") queue.push(rel(target));
      }
    }
  }
  return { modules: [...seen], packages };
}

describe("the machines' xstate", () => {
  it("is imported for `setup` and types: assign and fromPromise come from the runner's kit, and no other built-in action or guard is used", () => {
    // The runner applies an assignment and starts a promise actor that the kit remembered (src/kinds/machine/kit.ts);
    // xstate's own would be called as a plain function, silently (docs/design/kinds.md#the-runner).
    const BUILT_INS = ["assign", "fromPromise", "raise", "sendTo", "sendParent", "enqueueActions", "emit", "spawnChild", "stopChild", "log", "cancel"];
    const GUARDS = ["and", "or", "not", "stateIn"];
    const found = readGraph()
      .modules.filter((m) => m !== "kinds/machine/kit.ts")
      .flatMap((m) => {
        const file = ts.createSourceFile(m, readFileSync(join(SRC, m), "utf8"), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
        return file.statements.flatMap((s) => {
          if (!ts.isImportDeclaration(s) || !ts.isStringLiteral(s.moduleSpecifier) || s.moduleSpecifier.text !== "xstate") return [];
          const bindings = s.importClause?.namedBindings;
          if (s.importClause?.isTypeOnly || !bindings || !ts.isNamedImports(bindings)) return [];
          return bindings.elements
            .filter((e) => !e.isTypeOnly && [...BUILT_INS, ...GUARDS].includes((e.propertyName ?? e.name).text))
            .map((e) => `src/${m}: ${(e.propertyName ?? e.name).text}`);
        });
      });
    expect(found).toEqual([]);
  });
});
