#!/usr/bin/env node
/**
 * Benchmark: what the one machine runner costs (docs/design/kinds.md#why-the-runner-is-xstates-actor-and-what-it-costs).
 * The react machine alone, its ports answering at once: CPU per recursion of
 * xstate's actor as runMachine runs it (provide per step, the state reporter),
 * the actor without either part, and an interpreter over xstate's pure
 * functions (initialTransition/transition, the actions run here), which is
 * the other runner the design allows.
 *
 *   npm run build && node bench/runner-cost.mjs [--runs 2000] [--passes 2]
 */
import { parseArgs } from "node:util";
import { createActor, fromPromise, initialTransition, toPromise, transition } from "xstate";
import { stateInspector } from "../dist/engine/state-reporter.js";
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
const reporter = (machine) => stateInspector(machine, () => {}, { traceId: (context) => context.trace_id });
const shared = reactMachine.provide(implementations());

function onActor(machine, inspect) {
  const actor = createActor(machine, inspect ? { input, inspect: reporter(machine) } : { input });
  const output = toPromise(actor);
  actor.start();
  actor.send({ type: "RUN" });
  return output;
}

/** The other runner: xstate's pure functions, the actions run here, an invoked actor's end fed back as its done/error event. */
function onPureFunctions(machine) {
  return new Promise((resolve, reject) => {
    let snapshot;
    const run = (actions) => {
      for (const action of actions) {
        if (action.type === "xstate.spawnChild") {
          const { actorRef, id } = action.params;
          actorRef.subscribe({
            complete: () => feed({ type: `xstate.done.actor.${id}`, output: actorRef.getSnapshot().output, actorId: id }),
            error: (error) => feed({ type: `xstate.error.actor.${id}`, error, actorId: id }),
          });
          actorRef.start();
        } else if (action.type === "xstate.stopChild") action.params.actorRef?.stop();
        else action.exec?.(action.info, action.params);
      }
    };
    const feed = (event) => {
      const [next, actions] = transition(machine, snapshot, event);
      snapshot = next;
      run(actions);
      if (snapshot.status === "done") resolve(snapshot.output);
      else if (snapshot.status === "error") reject(snapshot.error);
    };
    const [first, actions] = initialTransition(machine, input);
    snapshot = first;
    run(actions);
    feed({ type: "RUN" });
  });
}

const variants = [
  ["actor, provide per step, state reporter (runMachine)", () => onActor(reactMachine.provide(implementations()), true)],
  ["actor, provide per step, no reporter", () => onActor(reactMachine.provide(implementations()), false)],
  ["actor, one machine, state reporter", () => onActor(shared, true)],
  ["actor, one machine, no reporter", () => onActor(shared, false)],
  ["pure functions, provide per step", () => onPureFunctions(reactMachine.provide(implementations()))],
  ["pure functions, one machine", () => onPureFunctions(shared)],
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
