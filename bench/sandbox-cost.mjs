#!/usr/bin/env node
/**
 * Benchmark: what `sandbox: true` costs a command tool per call
 * (docs/security.md#sandboxes). The same command tool called N times one
 * after the other, unconfined and under bubblewrap, passes alternating so
 * that the machine's load falls on both alike: wall time per call (median
 * of the passes), for a program that costs nearly nothing itself (`cat`,
 * its arguments echoed) and for a Node.js program (its start-up dominates).
 *
 *   npm run build && node bench/sandbox-cost.mjs [--calls 100] [--passes 3]
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { commandTool } from "../dist/tools/command.js";
import { fixed, median, printTable } from "./lib/stats.mjs";

const { values } = parseArgs({ options: { calls: { type: "string", default: "100" }, passes: { type: "string", default: "3" } } });
const CALLS = Number(values.calls);
const PASSES = Number(values.passes);

const dir = mkdtempSync(join(tmpdir(), "sandbox-cost-"));
// Readable by the unprivileged user a sandboxed program runs as when this runs as root.
chmodSync(dir, 0o755);
writeFileSync(join(dir, "echo.cjs"), "let s = ''; process.stdin.on('data', (d) => (s += d)).on('end', () => process.stdout.write(s));");
const programs = { cat: ["cat"], node: [process.execPath, join(dir, "echo.cjs")] };

const tool = (command, sandboxed) =>
  commandTool({
    type: "command",
    name: "echo",
    description: "echoes its arguments",
    parameters: { type: "object" },
    command,
    cwd: dir,
    env: {},
    timeout_ms: 30_000,
    max_output_bytes: 65_536,
    ...(sandboxed ? { sandbox: { network: false, writable: [] } } : {}),
  });

const ctx = { signal: new AbortController().signal, scope: { agent_id: "bench" }, emit() {}, call_id: "c" };

/** Milliseconds per call over CALLS calls one after the other. */
async function perCall(t) {
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) {
    const result = await t.execute({ i }, ctx);
    if (JSON.stringify(result) !== JSON.stringify({ i })) throw new Error(`unexpected result ${JSON.stringify(result)}`);
  }
  return (performance.now() - started) / CALLS;
}

const rows = [];
try {
  for (const [name, command] of Object.entries(programs)) {
    const plain = tool(command, false);
    const boxed = tool(command, true);
    // One warm-up call each: the first spawn pays for loading what later ones find cached.
    await plain.execute({ i: 0 }, ctx).catch(() => undefined);
    await boxed.execute({ i: 0 }, ctx);
    const times = { plain: [], boxed: [] };
    for (let pass = 0; pass < PASSES; pass++) {
      times.plain.push(await perCall(plain));
      times.boxed.push(await perCall(boxed));
    }
    const p = median(times.plain);
    const b = median(times.boxed);
    rows.push([name, fixed(p), fixed(b), fixed(b - p), `${fixed(b / p)}×`]);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
console.log(`sandbox cost per command tool call: ${CALLS} calls one after the other, median of ${PASSES} passes (ms per call)`);
printTable(["program", "unconfined", "sandbox: true", "added", "ratio"], rows);
