#!/usr/bin/env node
/**
 * Part of `npm run build`: writes the `yaml` package as one CommonJS file,
 * dist/vendor/yaml.cjs, bundled by esbuild from the installed package. Its
 * own entry is 72 modules that cost `validate` and `exec` 32-48 ms to load;
 * the bundle, the same code, 9-16 ms. src/built.ts (`lazilyBundled`) loads it,
 * or the package itself when running from the sources.
 *
 * `xstate` likewise, as dist/vendor/xstate.cjs (src/xstate-bundle.ts): Node
 * would also scan the package's CommonJS for its exports on every import.
 *
 * Beside each, <bundle>.v8cache: V8's code cache of the bundle once it has
 * done what a run does with it (parsed the team files and scripts of teams/;
 * run a machine with the features the kinds use), the functions a first run
 * compiles (~15-20 ms each for `exec`), stamped with the bundle's hash. Made
 * by this Node, for this Node: another version refuses it and compiles as
 * usual.
 */
import { buildSync } from "esbuild";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { compileBundle, runBundle, writeCodeCache } from "../dist/built.js";

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), "..");

/** What each bundle runs before its code cache is taken: what `validate` and `exec` do with it (src/config/parse.ts, src/models/script-format.ts). */
const EXERCISE = {
  yaml(yaml) {
    const dirs = [join(root, "teams"), join(root, "teams", "scripts")];
    for (const file of dirs.flatMap((dir) => readdirSync(dir).filter((f) => f.endsWith(".yaml")).map((f) => join(dir, f)))) {
      const text = readFileSync(file, "utf8");
      for (const options of [{ uniqueKeys: false, strict: true, version: "1.2" }, { uniqueKeys: true }]) {
        const lineCounter = new yaml.LineCounter();
        const doc = yaml.parseDocument(text, { ...options, lineCounter, prettyErrors: false });
        const walk = (node) => {
          if (yaml.isMap(node) || yaml.isSeq(node)) for (const item of node.items) walk(yaml.isPair(item) ? item.value : item);
          else if (node !== null && !yaml.isScalar(node) && !yaml.isAlias(node)) throw new Error("bundle-vendor: a yaml node of no known kind");
        };
        walk(doc.contents);
        doc.toJS({ maxAliasCount: 100 });
        lineCounter.linePos(text.length >> 1);
        yaml.isNode(doc.getIn(["agents"], true));
      }
    }
  },
  /** A machine with what the kinds' machines use: guards, eventless and delayed transitions, invoked promises, assign, final output, inspection. */
  async xstate({ assign, createActor, createMachine, fromPromise, setup, toPromise, transition }) {
    const machine = setup({
      actors: { work: fromPromise(async ({ input }) => input + 1) },
      guards: { enough: ({ context }) => context.n >= 3 },
      actions: { note: assign({ log: ({ context, event }) => [...context.log, event.type] }) },
    }).createMachine({
      id: "exercise",
      initial: "START",
      context: { n: 0, log: [] },
      states: {
        START: { always: [{ guard: "enough", target: "DONE" }, { target: "WORK" }] },
        WORK: {
          initial: "CALL",
          states: {
            CALL: { invoke: { src: "work", input: ({ context }) => context.n, onDone: { target: "SETTLED", actions: assign({ n: ({ event }) => event.output }) }, onError: "#exercise.DONE" } },
            SETTLED: { entry: "note", after: { 1: "#exercise.START" }, on: { NEXT: "#exercise.START" } },
          },
        },
        DONE: { type: "final" },
      },
      output: ({ context }) => context.n,
    });
    const seen = [];
    const actor = createActor(machine, { inspect: (event) => seen.push(event.type) });
    actor.start();
    if ((await toPromise(actor)) !== 3 || seen.length === 0) throw new Error("bundle-vendor: the xstate exercise went wrong");
    const toggle = createMachine({ id: "toggle", initial: "OFF", states: { OFF: { on: { FLIP: "ON" } }, ON: { type: "final" } } });
    transition(toggle, toggle.resolveState({ value: "OFF" }), { type: "FLIP" });
  },
  /** A command line like the CLI's (src/cli/main.ts): commands, arguments, options, a run, its help and a usage error. */
  async commander({ Command, CommanderError }) {
    const program = new Command().name("runtime").version("0.0.0", "-V, --version").showHelpAfterError().addHelpText("after", "\nmore").exitOverride();
    program.configureOutput({ writeOut: () => {}, writeErr: () => {} });
    let ran = false;
    program
      .command("exec")
      .description("run")
      .argument("<file>", "team file")
      .argument("[input...]", "the request")
      .option("-a, --agent <name>", "agent")
      .option("--progress", "show").option("--no-progress", "hide")
      .action(async () => {
        ran = true;
      });
    program.command("validate").argument("<file...>").action(() => {});
    await program.parseAsync(["node", "runtime", "exec", "team.yaml", "a", "question", "--agent", "x", "--no-progress"]);
    program.helpInformation();
    program.commands[0].helpInformation();
    try {
      await program.parseAsync(["node", "runtime", "exec", "--bogus"]);
    } catch (err) {
      if (!(err instanceof CommanderError)) throw err;
    }
    if (!ran) throw new Error("bundle-vendor: the commander exercise went wrong");
  },
};

// V8 refuses a code cache made under other V8 flags: one built under NODE_OPTIONS=--max-old-space-size=...
// would be refused by every ordinary run (the bundles then compile as usual). Said, not fatal.
const v8Flags = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? "").split(/\s+/)].filter(
  (flag) => flag.startsWith("--") && !/^--(enable-source-maps|inspect|cpu-prof|heap-prof|conditions|import|require|loader|experimental-|no-warnings|trace-warnings|no-deprecation)/.test(flag),
);
if (v8Flags.length > 0) {
  console.warn(`bundle-vendor: built with ${v8Flags.join(" ")}; a run without these flags will not use the code caches of dist/vendor (it compiles the bundles instead)`);
}

/** The package.json of package `name`, found up from its entry (not every package exports it). */
function packageJson(entry, name) {
  for (let dir = dirname(entry); dir !== dirname(dir); dir = dirname(dir)) {
    const file = join(dir, "package.json");
    if (!existsSync(file)) continue;
    const pkg = JSON.parse(readFileSync(file, "utf8"));
    if (pkg.name === name) return pkg;
  }
  throw new Error(`bundle-vendor: no package.json of ${name} above ${entry}`);
}

for (const name of ["yaml", "xstate", "commander"]) {
  const entry = require.resolve(name);
  const { version, license } = packageJson(entry, name);
  const bundle = join(root, "dist", "vendor", `${name}.cjs`);
  buildSync({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    outfile: bundle,
    banner: { js: `/* ${name} ${version} (${license}), bundled by scripts/bundle-vendor.mjs from node_modules/${name} */` },
    logLevel: "warning",
  });
  const source = readFileSync(bundle, "utf8");
  const script = compileBundle(source, bundle);
  await EXERCISE[name](runBundle(script, bundle));
  writeCodeCache(bundle, source, script);
}
