#!/usr/bin/env node
/**
 * Regenerates the Mermaid diagrams of docs/design/machines/*.md from the
 * machine definitions themselves, so the pictures cannot drift from the code.
 *
 * Each diagram sits between markers naming a machine of `runtime graph --machine`:
 *
 *   <!-- graph:react -->
 *   ```mermaid
 *   ...generated, do not edit...
 *   ```
 *   <!-- /graph -->
 *
 * The text between the markers is replaced by `machineToMermaid(machine, title)`
 * (dist/graph/mermaid.js) for the entry of MACHINES (dist/graph/machines.js),
 * the very output of `node bin/runtime.js graph --machine NAME`.
 *
 * Usage (reads the compiled code, so build first):
 *   npm run build && node docs/design/generate.mjs           rewrite the files
 *   npm run build && node docs/design/generate.mjs --check   exit 1 if any diagram is stale
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));
const root = join(here, "..", "..");
const machinesDir = join(here, "machines");
const dist = join(root, "dist", "graph");
const check = process.argv.includes("--check");

for (const file of ["machines.js", "mermaid.js"]) {
  if (!existsSync(join(dist, file))) {
    console.error(`generate.mjs: ${relative(root, join(dist, file))} is missing; run \`npm run build\` first`);
    process.exit(2);
  }
}
const { MACHINES } = await import(pathToFileURL(join(dist, "machines.js")).href);
const { machineToMermaid } = await import(pathToFileURL(join(dist, "mermaid.js")).href);

/** `<!-- graph:NAME -->`, anything, `<!-- /graph -->` (lazy: one block at a time). */
const BLOCK = /<!-- graph:([\w-]+) -->\n[\s\S]*?<!-- \/graph -->/g;

const problems = [];
const drawn = new Set();
let stale = 0;

for (const name of readdirSync(machinesDir)
  .filter((f) => f.endsWith(".md"))
  .sort()) {
  const path = join(machinesDir, name);
  const text = readFileSync(path, "utf8");
  const next = text.replace(BLOCK, (block, machine) => {
    const entry = MACHINES[machine];
    if (!entry) {
      problems.push(`${relative(root, path)}: unknown machine '${machine}' (machines: ${Object.keys(MACHINES).join(", ")})`);
      return block;
    }
    drawn.add(machine);
    const diagram = machineToMermaid(entry.machine, entry.title);
    return `<!-- graph:${machine} -->\n\`\`\`mermaid\n${diagram}\`\`\`\n<!-- /graph -->`;
  });
  if (next === text) continue;
  stale++;
  if (check) console.error(`stale: ${relative(root, path)}`);
  else {
    writeFileSync(path, next);
    console.log(`updated ${relative(root, path)}`);
  }
}

for (const machine of Object.keys(MACHINES)) {
  if (!drawn.has(machine)) problems.push(`machine '${machine}' is drawn in no docs/design/machines/*.md (add a <!-- graph:${machine} --> block)`);
}
for (const problem of problems) console.error(`generate.mjs: ${problem}`);
if (problems.length > 0 || (check && stale > 0)) process.exit(1);
if (stale === 0) console.log("docs/design/machines: every diagram is up to date");
