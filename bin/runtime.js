#!/usr/bin/env node
import module from "node:module";

// Node >= 22.1 keeps compiled code in a cache of its own between runs (docs/design/engine.md#start-up); Node 20 has none.
module.enableCompileCache?.();

// A bare `runtime --help` prints the text the build wrote from the real command line
// (scripts/write-help.mjs), without loading the commands; anything else runs them.
const args = process.argv.slice(2);
let help;
if (args.length === 1 && (args[0] === "--help" || args[0] === "-h") && !process.env.RUNTIME_LIVE_HELP) {
  const { readFileSync } = await import("node:fs");
  try {
    help = readFileSync(new URL("../dist/cli/help.txt", import.meta.url), "utf8");
  } catch {
    // Not built with it: the commands print their help themselves.
  }
}
if (help !== undefined) {
  process.stdout.write(help);
} else {
  const { main } = await import("../dist/cli/main.js");
  process.exitCode = await main(process.argv);
}
