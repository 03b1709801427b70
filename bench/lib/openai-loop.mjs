#!/usr/bin/env node
/**
 * The baseline of bench/serve-waiting.mjs, in a process of its own so that
 * its RSS is its own: a minimal hand-written tool loop on the `openai`
 * client as it comes (one client, Node's fetch), `--runs` tasks at once
 * against bench/lib/chat-server.mjs, each the same task as a run of the
 * bench's team (a calculator call per step, the answer checked).
 *
 *   node bench/lib/openai-loop.mjs --url URL --runs N --rate R --steps S --input TEXT
 *
 * It warms up (a few tasks with no model latency), then prints
 * `{"ready":true}` and waits for a line on stdin; then it starts the N tasks,
 * R a second, and once all have ended prints `{"ok":K,"failed":F,"wall":S,"error":...}`. The parent
 * samples its RSS meanwhile (/proc).
 */
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import OpenAI from "openai";
import { calculate } from "../../dist/tools/builtin/calculator.js";

const { values } = parseArgs({
  options: { url: { type: "string" }, runs: { type: "string" }, rate: { type: "string" }, steps: { type: "string" }, input: { type: "string" } },
});
const STEPS = Number(values.steps);
const SYSTEM = "You solve arithmetic problems with the calculator tool, one call per step, then answer with the JSON protocol.";
const TOOLS = [
  {
    type: "function",
    function: {
      name: "calculator",
      description: "Evaluate an arithmetic expression.",
      parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"], additionalProperties: false },
    },
  },
];
const client = new OpenAI({ apiKey: "bench-key", baseURL: values.url, maxRetries: 0 });
const expected = STEPS > 1 ? `last=${await calculate(`round(pi * ${STEPS - 1}^2, 2)`)}` : "last=none";

async function task(input) {
  const messages = [
    { role: "system", content: SYSTEM },
    { role: "user", content: input },
  ];
  for (let i = 0; i < 40; i++) {
    const message = (await client.chat.completions.create({ model: "bench-model", messages, tools: TOOLS })).choices[0].message;
    messages.push(message);
    if (!message.tool_calls?.length) {
      const answer = JSON.parse(message.content).action.result.output.answer;
      if (answer !== expected) throw new Error(`answered ${answer}, not ${expected}`);
      return;
    }
    for (const call of message.tool_calls) {
      const { expression } = JSON.parse(call.function.arguments);
      messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify({ expression, result: await calculate(expression) }) });
    }
  }
  throw new Error("did not finish in 40 model calls");
}

for (let i = 0; i < 20; i++) await task(`${values.input} delay=0 warm=${i}`);
process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
await new Promise((resolve) => createInterface({ input: process.stdin }).once("line", resolve));
const started = performance.now();
let ok = 0;
let error;
const tasks = [];
for (let i = 0; i < Number(values.runs); i++) {
  const wait = started + (i * 1000) / Number(values.rate) - performance.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  tasks.push(
    task(`${values.input} run=${i}`).then(
      () => ok++,
      (err) => (error ??= String(err?.message ?? err)),
    ),
  );
}
await Promise.all(tasks);
process.stdout.write(`${JSON.stringify({ ok, failed: Number(values.runs) - ok, wall: (performance.now() - started) / 1000, error })}\n`);
process.exit(0);
