#!/usr/bin/env node
/**
 * Benchmark: what guardrails cost (docs/guardrails.md#cost).
 *
 *   1. one step's output checked by five in-process guardrails (three deny
 *      patterns, pii of all four kinds, max_chars), on answers of 300, 2,000
 *      and 8,000 characters: time per step, against the aim of 1 ms;
 *   2. whole runs of a scripted react team (two tool calls, an answer),
 *      trace off, in this process: CPU per run without guardrails and with
 *      the five on every input, output, tool_input and tool_output, each the
 *      median of --rounds alternating rounds of --runs runs.
 *
 * --baseline DIR (a build of the runtime before guardrails, its dist/) adds
 * the run without guardrails on that build, in the same rounds: what having
 * guardrails in the code costs a run that has none.
 *
 *   npm run build && node bench/guardrails.mjs [--runs 300] [--rounds 5] [--baseline ../other/dist]
 */
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { loadTeam, runTeam } from "../dist/index.js";
import { StepGuards } from "../dist/guardrails/guard.js";
import { loadLine } from "./lib/bench-team.mjs";
import { fixed, median, printTable } from "./lib/stats.mjs";

const { values } = parseArgs({
  options: { runs: { type: "string", default: "300" }, rounds: { type: "string", default: "5" }, baseline: { type: "string" } },
});
const baseline = values.baseline ? await import(resolve(values.baseline, "index.js")) : undefined;
const RUNS = Number(values.runs);
const ROUNDS = Number(values.rounds);

const FIVE = (on) => [
  { name: "inject", on, check: { kind: "deny", patterns: ["ignore (all )?previous instructions"] }, action: "block", max_retries: 1 },
  { name: "secrets", on, check: { kind: "deny", patterns: ["api[_-]?key\\s*[:=]", "BEGIN (RSA |EC )?PRIVATE KEY"] }, action: "block", max_retries: 1 },
  { name: "shell", on, check: { kind: "deny", patterns: ["rm -rf /", "curl [^|]*\\| *sh"] }, action: "block", max_retries: 1 },
  { name: "pii", on, check: { kind: "pii", types: ["email", "phone", "credit_card", "iban"] }, action: "redact", max_retries: 1 },
  { name: "long", on, check: { kind: "max_chars", max: 100_000 }, action: "block", max_retries: 1 },
];

// 1. One step's output through five guardrails.
const sentence = "The area of a circle of radius 5 m is 78.54 m², order 2026-11-27 ref 1234-5678, call us on +44 20 7946 0958. ";
const guards = new StepGuards(FIVE("output"), {
  agent: "bench",
  signal: new AbortController().signal,
  emit: () => {},
  block: () => {},
  judge: async () => ({ pass: true, reason: "" }),
});
const checkRows = [];
for (const size of [300, 2000, 8000]) {
  const text = sentence.repeat(Math.ceil(size / sentence.length)).slice(0, size);
  for (let i = 0; i < 200; i++) await guards.check("output", text);
  const n = 2000;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await guards.check("output", text);
  const us = Number(process.hrtime.bigint() - start) / 1000 / n;
  checkRows.push([`${size} characters`, fixed(us / 1000, 3), us / 1000 < 1 ? "yes" : "NO"]);
}

// 2. Whole runs, without and with guardrails everywhere.
const dir = mkdtempSync(join(tmpdir(), "bench-guardrails-"));
const reply = (type, answer) => JSON.stringify({ observe: "", thought: "", action: { result: { action_type: type, output: answer ? { answer } : {} } } });
writeFileSync(
  join(dir, "script.yaml"),
  `version: 1
replies:
  - agent: solver
    content: '${reply("CALL_TOOL")}'
    tool_calls:
      - { id: a, name: calculator, arguments: { expression: "round(pi * 5^2, 2)" } }
      - { id: b, name: calculator, arguments: { expression: "round(2 * pi * 5, 2)" } }
  - agent: solver
    content: '${reply("ANSWER", "Area {{result:a.result}} m², circumference {{result:b.result}} m; mail help@example.com.")}'
`,
);
const teamYaml = (guarded) => `version: 1
name: bench-guardrails
models:
  offline: { provider: scripted, script: ./script.yaml }
${
  guarded
    ? `guardrails:
${["input", "output", "tool_input", "tool_output"]
  .flatMap((on) => [
    `  - { on: ${on}, deny: ["ignore (all )?previous instructions"] }`,
    `  - { on: ${on}, deny: ["api[_-]?key\\\\s*[:=]", "BEGIN (RSA |EC )?PRIVATE KEY"] }`,
    `  - { on: ${on}, deny: ["rm -rf /"] }`,
    `  - { on: ${on}, pii: [email, phone, credit_card, iban], action: redact }`,
    `  - { on: ${on}, max_chars: 100000 }`,
  ])
  .join("\n")}
`
    : ""
}agents:
  solver: { kind: react, tools: [calculator] }
`;
const teams = {};
for (const [name, guarded] of [
  ["none", false],
  ["guarded", true],
]) {
  writeFileSync(join(dir, `${name}.yaml`), teamYaml(guarded));
  teams[name] = await loadTeam(join(dir, `${name}.yaml`));
}
if (baseline) teams.before = await baseline.loadTeam(join(dir, "none.yaml"));
async function round(team, run = runTeam) {
  const cpu = process.cpuUsage();
  for (let i = 0; i < RUNS; i++) {
    const result = await run(team, { input: "Area and circumference of a circle of radius 5?", trace: false, journal: false }).result;
    if (result.result_type !== "answer") throw new Error(`run ended ${result.result_type}: ${result.error?.message}`);
  }
  const used = process.cpuUsage(cpu);
  return (used.user + used.system) / 1000 / RUNS;
}
await round(teams.none);
await round(teams.guarded);
if (baseline) await round(teams.before, baseline.runTeam);
const ms = { none: [], guarded: [], before: [] };
for (let r = 0; r < ROUNDS; r++) {
  if (baseline) ms.before.push(await round(teams.before, baseline.runTeam));
  ms.none.push(await round(teams.none));
  ms.guarded.push(await round(teams.guarded));
}

console.log(`guardrails: ${loadLine()}`);
printTable(["5 guardrails on one step's output", "ms a step", "under 1 ms"], checkRows);
console.log("");
const none = median(ms.none);
const guarded = median(ms.guarded);
printTable(
  ["scripted react run (2 tool calls), trace off", "CPU ms a run", "ratio"],
  [
    ...(baseline ? [[`no guardrails, the build before them (${values.baseline})`, fixed(median(ms.before), 3), fixed(median(ms.before) / none, 2)]] : []),
    ["no guardrails", fixed(none, 3), "1.00"],
    ["5 on each of input, output, tool_input, tool_output", fixed(guarded, 3), fixed(guarded / none, 2)],
  ],
);
