#!/usr/bin/env node
/**
 * Benchmark: start-up, beside `node -e 0` measured in the same run.
 *
 *   - library import: `import("yaml-agent-runtime")` (dist/index.js) in a
 *     fresh process, timed inside it (performance.now() around the import)
 *     and as the whole process's wall time;
 *   - `runtime --help`, `runtime validate teams/circle-react.yaml`;
 *   - `runtime exec teams/circle-react.yaml "..."`: the README's demo (the
 *     scripted model, the calculator, the trace store under a temp dir), wall
 *     and CPU (user + system of the child, reported by a one-line preload).
 *
 * Every command is spawned ROUNDS times, interleaved (round 1 of each, then
 * round 2, ...), so that the machine's drift hits all of them alike; figures
 * are medians. `--compare DIR` also measures another built checkout (its
 * dist/ and bin/) in the same rounds, e.g. the commit before a change.
 *
 *   npm run build && node bench/startup.mjs [--rounds 15] [--compare /path/to/other/checkout]
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import { loadLine } from "./lib/bench-team.mjs";
import { fixed, median, printTable } from "./lib/stats.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "15" },
    quick: { type: "boolean", default: false },
    compare: { type: "string" },
  },
});
const ROUNDS = values.quick ? 5 : Number(values.rounds);
const QUESTION = "What are the area and circumference of a circle with radius 5 meters?";
const CPU_PRELOAD = pathToFileURL(join(ROOT, "bench/lib/report-cpu.mjs")).href;

/** The commands of one checkout; `root` holds its bin/ and dist/. */
function commands(root, label) {
  const index = pathToFileURL(join(root, "dist/index.js")).href;
  const at = (name) => (label ? `${name} [${label}]` : name);
  return [
    {
      name: at("library import"),
      argv: [
        "--input-type=module",
        "-e",
        `const t = performance.now(); await import(${JSON.stringify(index)}); process.stdout.write(String(performance.now() - t));`,
      ],
      inner: true,
      target: { ms: 250, text: "< 250 ms (in process)" },
    },
    { name: at("runtime --help"), argv: [join(root, "bin/runtime.js"), "--help"], target: { ratio: 1.5, text: "< 1.5× node -e 0" } },
    {
      name: at("runtime validate circle-react"),
      argv: [join(root, "bin/runtime.js"), "validate", join(root, "teams/circle-react.yaml")],
      target: { ratio: 3, text: "< 3× node -e 0" },
    },
    {
      name: at("runtime exec circle-react"),
      argv: [join(root, "bin/runtime.js"), "exec", join(root, "teams/circle-react.yaml"), QUESTION],
      cpu: true,
      target: { ms: 400, text: "< 400 ms wall" },
    },
  ];
}

const list = [
  { name: "node -e 0", argv: ["-e", "0"] },
  ...commands(ROOT, values.compare ? "this" : ""),
  ...(values.compare ? commands(resolve(values.compare), "compare") : []),
];

const traceDir = mkdtempSync(join(tmpdir(), "bench-startup-"));
const cpuFile = join(traceDir, "cpu.txt");
const samples = new Map(list.map((c) => [c.name, { wall: [], inner: [], cpu: [] }]));

function spawnOnce(command, withCpu) {
  const argv = withCpu ? [`--import=${CPU_PRELOAD}`, ...command.argv] : command.argv;
  const started = performance.now();
  const run = spawnSync(process.execPath, argv, {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, RUNTIME_TRACE_DIR: traceDir, BENCH_CPU_FILE: cpuFile, FORCE_COLOR: "0" },
  });
  const wall = performance.now() - started;
  if (run.status !== 0) throw new Error(`${command.name} exited ${run.status ?? run.signal}: ${run.stderr.trim()}`);
  return { wall, stdout: run.stdout };
}

try {
  console.log(`startup: ${ROUNDS} interleaved rounds, node ${process.version}`);
  console.log(`   ${loadLine()}\n`);
  for (const c of list) spawnOnce(c, false); // warm the file cache
  for (let r = 0; r < ROUNDS; r++) {
    // Odd rounds run the list backwards: with --compare, neither checkout always runs right after the other's same command.
    for (const c of r % 2 ? [...list].reverse() : list) {
      const s = samples.get(c.name);
      const { wall, stdout } = spawnOnce(c, false);
      s.wall.push(wall);
      if (c.inner) s.inner.push(Number(stdout));
      if (c.cpu) {
        // A second spawn with the CPU preload, so that the wall figure above carries no preload.
        spawnOnce(c, true);
        s.cpu.push(Number(readFileSync(cpuFile, "utf8")));
      }
    }
  }
  const node = median(samples.get("node -e 0").wall);
  printTable(
    ["command", "wall ms", "× node -e 0", "in-process ms", "CPU ms", "target", "met"],
    list.map((c) => {
      const s = samples.get(c.name);
      const wall = median(s.wall);
      const inner = s.inner.length ? median(s.inner) : NaN;
      const cpu = s.cpu.length ? median(s.cpu) : NaN;
      let met = "-";
      if (c.target?.ratio) met = wall / node < c.target.ratio ? "yes" : "NO";
      if (c.target?.ms) met = (c.inner ? inner : wall) < c.target.ms ? "yes" : "NO";
      return [
        c.name,
        fixed(wall, 1),
        c.name === "node -e 0" ? "-" : `${fixed(wall / node)}×`,
        c.inner ? fixed(inner, 1) : "",
        c.cpu ? fixed(cpu, 1) : "",
        c.target?.text ?? "",
        met,
      ];
    }),
  );
  console.log(`\n${loadLine()}`);
} finally {
  rmSync(traceDir, { recursive: true, force: true });
}
