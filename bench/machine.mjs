#!/usr/bin/env node
/**
 * Benchmark: the react machine alone, run by xstate's actor and by the
 * interpreter (docs/design/engine.md#the-interpreter), each with the state
 * reporter the engine gives it, and ports that answer at once: CPU per
 * recursion of a 10-recursion run (9 tool rounds, then the answer). Rounds
 * alternate so that neither gets the warmer process.
 *
 *   npm run build && node bench/machine.mjs [--runs 3000] [--rounds 2]
 */
import { parseArgs } from "node:util";
import { createActor, toPromise } from "../dist/xstate-bundle.js";
import { reactMachine } from "../dist/kinds/react/machine.js";
import { compileMachine, startMachine } from "../dist/machine-interpreter/index.js";
import { stateInspector, stateReporter } from "../dist/engine/state-reporter.js";
import { median, printTable } from "./lib/stats.mjs";

const { values } = parseArgs({ options: { runs: { type: "string", default: "3000" }, rounds: { type: "string", default: "2" } } });
const RUNS = Number(values.runs);
const ROUNDS = Number(values.rounds);
if (!Number.isInteger(RUNS) || RUNS < 1 || !Number.isInteger(ROUNDS) || ROUNDS < 1) {
  console.error("machine.mjs: --runs and --rounds take whole numbers from 1");
  process.exit(2);
}

const RECURSIONS = 10;
const reply = { content: "", tool_calls: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 }, finish_reason: "stop" };
const call = { action_type: "CALL_TOOL", calls: [{ id: "c", name: "calculator", arguments: "{}" }], observe: "o", thought: "t" };
const answer = { action_type: "ANSWER", answer: "a", observe: "o", thought: "t" };
const outcome = [{ call_id: "c", tool: "calculator", arguments: {}, ok: true, result: 1, duration_ms: 0 }];
const compiled = compileMachine(reactMachine);
let events = 0;
const reporterPorts = { emit: () => void events++, deferUntilNext: (flush) => flush() };
const traceId = (context) => context.trace_id;

let ids = 0;
function input() {
  let calls = 0;
  const ports = {
    callModel: async () => ({ reply, action: ++calls >= RECURSIONS ? answer : call }),
    runTools: async () => outcome,
    startRecursion: () => undefined,
    announcePlan: () => undefined,
  };
  return { max_iteration: 40, newId: () => `id${ids++}`, ports };
}

const runners = {
  "xstate's actor": async () => {
    const actor = createActor(reactMachine, { input: input(), inspect: stateInspector("react", reporterPorts, { traceId }) });
    actor.start();
    actor.send({ type: "RUN" });
    return toPromise(actor);
  },
  interpreter: async () => {
    const run = startMachine(compiled, { input: input(), observe: stateReporter("react", reporterPorts, { traceId }) });
    run.send({ type: "RUN" });
    return run.output;
  },
};

/** µs of CPU per recursion over RUNS runs, after as many to warm up. */
async function measure(run) {
  for (let i = 0; i < RUNS; i++) await run();
  const before = process.cpuUsage();
  for (let i = 0; i < RUNS; i++) {
    const output = await run();
    if (output.result_type !== "answer" || output.iterations !== RECURSIONS) throw new Error(`unexpected output ${JSON.stringify(output)}`);
  }
  const used = process.cpuUsage(before);
  return (used.user + used.system) / RUNS / RECURSIONS;
}

const figures = Object.fromEntries(Object.keys(runners).map((name) => [name, []]));
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 ? Object.keys(runners).reverse() : Object.keys(runners);
  for (const name of order) figures[name].push(await measure(runners[name]));
}
const base = median(figures.interpreter);
console.log(`machine: the react machine alone, ${RUNS} runs of ${RECURSIONS} recursions per round, ${ROUNDS} rounds, node ${process.version}\n`);
printTable(
  ["runs it", "µs CPU per recursion (each round)", "median", "÷ interpreter"],
  Object.entries(figures).map(([name, us]) => [name, us.map((u) => u.toFixed(1)).join(", "), median(us).toFixed(1), `${(median(us) / base).toFixed(1)}×`]),
);
console.log(`\n(${events} state.changed events reported in all)`);
