#!/usr/bin/env node
/**
 * Benchmark: the cost of building an object from another plus new fields, in
 * the forms the engine could use for an event (docs/performance.md#object-spread).
 * On Node 20 a property added to an object made by a spread takes a slow
 * path; the figures show by how much on the machine at hand.
 *
 *   node bench/object-spread.mjs [--n 1000000]
 */
import { parseArgs } from "node:util";
import { printTable } from "./lib/stats.mjs";

const { values } = parseArgs({ options: { n: { type: "string", default: "1000000" } } });
const N = Number(values.n);
const bodies = [
  { type: "state.changed", machine: "react", from: "RECURSION.INPUT", to: "RECURSION.CALL_LLM.OBSERVE" },
  { type: "llm.request", model: "m", messages: 3 },
  { type: "tool.finished", call_id: "c1", tool: "calculator", ok: true, result: 1 },
];
const scope = { agent_id: "solver", step_id: "s1" };

const forms = {
  "{ ...body, seq, ts, task_id, ...scope }": (b, i) => ({ ...b, seq: i, ts: "2026-01-01T00:00:00.000Z", task_id: "t", ...scope }),
  "{ ...scope, trace_id }": (_b, i) => ({ ...scope, trace_id: `t${i & 7}` }),
  "Object.assign({}, body) then sets": (b, i) => {
    const e = Object.assign({}, b);
    e.seq = i;
    e.ts = "2026-01-01T00:00:00.000Z";
    e.task_id = "t";
    e.agent_id = scope.agent_id;
    e.step_id = scope.step_id;
    e.trace_id = "t1";
    return e;
  },
  "Object.assign({}, scope, { trace_id })": (_b, i) => Object.assign({}, scope, { trace_id: `t${i & 7}` }),
  "{ seq, ...body } (new keys first)": (b, i) => ({ seq: i, ts: "2026-01-01T00:00:00.000Z", task_id: "t", ...b }),
};

function time(form) {
  let sink = 0;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) sink += form(bodies[i % 3], i).task_id?.length ?? 1;
  if (sink < 0) console.log(sink);
  return ((performance.now() - t0) * 1000) / N;
}

for (const form of Object.values(forms)) time(form); // warm up
const rows = Object.entries(forms).map(([name, form]) => ({ name, us: time(form) }));
const base = rows.find((r) => r.name.startsWith("Object.assign({}, body)")).us;
console.log(`object-spread: ${N} objects per form, node ${process.version} (V8 ${process.versions.v8})\n`);
printTable(
  ["form", "µs per object", "÷ Object.assign"],
  rows.map((r) => [r.name, r.us.toFixed(3), `${(r.us / base).toFixed(1)}×`]),
);
