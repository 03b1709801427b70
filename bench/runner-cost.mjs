#!/usr/bin/env node
/**
 * Benchmark: what the one machine runner costs (docs/design/kinds.md#why-the-runner-is-not-xstates-actor).
 * The react machine alone, its ports answering at once: CPU per recursion of
 * the project's runner as runMachine runs it (the step's implementations, the
 * state reporter), the runner without the reporter, and xstate's own actor
 * over the same machine (`provide` per step, the reporter's equivalent as its
 * `inspect`; and one machine for every run, nothing inspected: its floor).
 *
 *   npm run build && node bench/runner-cost.mjs [--runs 2000] [--passes 2]
 */
import { parseArgs } from "node:util";
import { createActor, toPromise } from "xstate";
import { stateObserver } from "../dist/engine/state-reporter.js";
import { compile } from "../dist/kinds/machine/compile.js";
import { interpret } from "../dist/kinds/machine/interpret.js";
import { fromPromise } from "../dist/kinds/machine/kit.js";
import { openRecursion, reactMachine } from "../dist/kinds/react/machine.js";
import { loadLine } from "./lib/bench-team.mjs";

const { values } = parseArgs({ options: { runs: { type: "string", default: "2000" }, passes: { type: "string", default: "2" } } });
const RUNS = Number(values.runs);
const PASSES = Number(values.passes);
const RECURSIONS = 10;
const AT_ONCE = 50;

let ids = 0;
const newId = () => `t${++ids}`;
/** A tool call for the first recursions, then the answer. */
const reply = (iteration) => ({
  reply: {},
  action:
    iteration < RECURSIONS
      ? { action_type: "CALL_TOOL", observe: "", thought: "", calls: [{ id: "c", name: "calc", arguments: "{}" }] }
      : { action_type: "ANSWER", observe: "", thought: "", answer: "done" },
});
const implementations = () => ({
  actors: {
    callModel: fromPromise(async ({ input }) => reply(input.iteration)),
    runTools: fromPromise(async () => [{ call_id: "c", tool: "calc", arguments: {}, ok: true, result: 1 }]),
  },
  actions: { openRecursion: openRecursion(newId), startRecursion: () => {}, announcePlan: () => {} },
});
const input = { max_iteration: 30 };
const start = { type: "RUN" };
const traceId = (context) => context.trace_id;

function onRunner(reporter) {
  const observer = reporter ? stateObserver(reactMachine, () => {}, { traceId }) : undefined;
  return interpret(compile(reactMachine), implementations(), input, { start, ...(observer ? { observer } : {}) });
}

/** xstate's actor; `inspect` does what the reporter needs of it: each microstep's state value, each event and action heard. */
function onActor(machine, inspect) {
  const seen = [];
  const actor = createActor(machine, inspect ? { input, inspect: (e) => e.type === "@xstate.microstep" && seen.push(e.snapshot.value) } : { input });
  const output = toPromise(actor);
  actor.start();
  actor.send(start);
  return output;
}
const shared = reactMachine.provide(implementations());

const variants = [
  ["the runner, the state reporter (runMachine)", () => onRunner(true)],
  ["the runner, no reporter", () => onRunner(false)],
  ["xstate's actor, provide per step, inspected", () => onActor(reactMachine.provide(implementations()), true)],
  ["xstate's actor, one machine, not inspected: its floor", () => onActor(shared, false)],
];

console.log(
  `runner-cost: react machine, ${RECURSIONS} recursions a run, ${AT_ONCE} runs at once, ${RUNS} runs a variant, ${PASSES} pass(es) after a warm-up; ${loadLine()}`,
);
const results = new Map(variants.map(([name]) => [name, []]));
for (let pass = 0; pass <= PASSES; pass++) {
  for (const [name, runOne] of variants) {
    const before = process.cpuUsage();
    for (let i = 0; i < RUNS / AT_ONCE; i++) {
      const outputs = await Promise.all(Array.from({ length: AT_ONCE }, runOne));
      if (outputs.some((o) => o.answer !== "done")) throw new Error(`${name}: a run did not answer`);
    }
    const used = process.cpuUsage(before);
    if (pass > 0) results.get(name).push((used.user + used.system) / RUNS / RECURSIONS);
  }
}
for (const [name, figures] of results) console.log(`${name.padEnd(54)} ${figures.map((f) => f.toFixed(0).padStart(4)).join(" ")} µs CPU / recursion`);
