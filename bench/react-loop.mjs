#!/usr/bin/env node
/**
 * Benchmark: the runtime's cost on a ReAct tool loop, beside a minimal
 * hand-written `openai` loop measured in the same run.
 *
 * An OpenAI-compatible server (bench/lib/chat-server.mjs, its own process on
 * 127.0.0.1, so its CPU is not counted here) answers a calculator tool call
 * for the first N-1 model calls of a conversation and an ANSWER on the N-th.
 * Every loop runs the same calculator (the runtime's `calculate`) and
 * must return the last tool result the server saw, so none can skip work.
 * The baseline is the `openai` package as it comes, on Node's fetch; the
 * runtime gives the same package undici's `fetch` on an undici dispatcher
 * (src/models/model-fetch.ts). A fourth variant, printed for reference and
 * held to no aim, is the floor: the same loop with no client library, on
 * undici's `request()`.
 *
 * --stream streams every model reply (the team's `stream: true`, the loops'
 * `stream: true`), as server-sent events.
 *
 *   1. overhead per step: a 10-step loop, runTeam (trace on / off) vs baseline
 *   2. CPU per task (process.cpuUsage)
 *   3. tasks per second and CPU per task at 50 concurrent runs, both against the aim
 *   4. peak memory at 500 concurrent runs: each variant in a process of its
 *      own (peak RSS is per process), which imports only what it runs
 *   5. request bytes per recursion at 10 and 30 recursions (linear growth)
 *   6. where trace-on time goes: latency of TraceStore.append on a task's events
 *
 *   7. against the floor: section 3 again with every reply streamed (unless
 *      --stream made it streamed already), then CPU per task and tasks/s of
 *      the floor, the `openai` loop and the runtime with its trace and journal
 *      on, streamed and not, as ratios to the floor of the same mode, and
 *      each streamed figure as a ratio to its own not-streamed one
 *   8. with --profile: where the runtime's CPU goes (trace on, 50 at once),
 *      from V8's sampling profiler, by part of the path (bench/lib/profile.mjs)
 *
 * --throughput runs 0, 3, 7 (and 8) only. --dist measures the runtime built at
 * another checkout (`--dist ../base/dist`), so two versions can be run side
 * by side with the same bench.
 *
 * CLI start-up beside `node -e 0` is bench/startup.mjs.
 *
 *   npm run build && node bench/react-loop.mjs [--quick] [--tasks 30] [--steps 10]
 *     [--concurrency 50] [--rounds 3] [--memory-concurrency 500] [--latency MS]
 *     [--warmup 400]
 *     [--stream] [--throughput] [--profile] [--dist DIR]
 *
 * --warmup runs that many tasks of each variant (in whole batches of
 * --concurrency) before anything is measured: V8 keeps optimising a
 * process's code for its first few hundred tasks, the loop's as much as the
 * runtime's, and the figures are those of a warm process.
 *
 * --latency delays every model reply (default 0: the figures are pure client
 * overhead, the worst case for the runtime; real models take 100s of ms).
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs, promisify } from "node:util";
import OpenAI from "openai";
import { Agent, request } from "undici";
import { benchTeamYaml, loadLine, startChatServer } from "./lib/bench-team.mjs";
import { profileParts } from "./lib/profile.mjs";
import { fixed, measure, median, printTable } from "./lib/stats.mjs";

const { values } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    tasks: { type: "string" },
    steps: { type: "string", default: "10" },
    concurrency: { type: "string", default: "50" },
    rounds: { type: "string" },
    "memory-concurrency": { type: "string" },
    latency: { type: "string", default: "0" },
    warmup: { type: "string" },
    stream: { type: "boolean", default: false },
    profile: { type: "boolean", default: false },
    throughput: { type: "boolean", default: false },
    dist: { type: "string" },
    // internal: one variant's memory run, in a process of its own
    "memory-child": { type: "string" },
    url: { type: "string" },
    team: { type: "string" },
    "trace-dir": { type: "string" },
  },
});
const QUICK = values.quick;
const TASKS = Number(values.tasks ?? (QUICK ? 8 : 30));
const STEPS = Number(values.steps);
const CONCURRENCY = Number(values.concurrency);
const ROUNDS = Number(values.rounds ?? (QUICK ? 1 : 3));
const MEMORY_CONCURRENCY = Number(values["memory-concurrency"] ?? (QUICK ? 200 : 500));
const LATENCY = Number(values.latency);
const WARMUP = Number(values.warmup ?? (QUICK ? 150 : 400));
for (const [name, value, least] of [
  ["--tasks", TASKS, 1],
  ["--steps", STEPS, 1],
  ["--concurrency", CONCURRENCY, 1],
  ["--rounds", ROUNDS, 1],
  ["--memory-concurrency", MEMORY_CONCURRENCY, 1],
  ["--warmup", WARMUP, 0],
  ["--latency", LATENCY, 0],
]) {
  if (!Number.isInteger(value) || value < least) {
    console.error(`react-loop: ${name} takes a whole number of at least ${least} (got ${value})`);
    process.exit(2);
  }
}
const AIM = 1.3;
const STREAM = values.stream;
const DIST = values.dist ? resolve(values.dist) : fileURLToPath(new URL("../dist/", import.meta.url));
/** A module of the runtime build being measured. */
const dist = (path) => import(pathToFileURL(join(DIST, path)).href);
const { calculate } = await dist("tools/builtin/calculator.js");

// ---------------------------------------------------------------- server

// ---------------------------------------------------------------- the two loops

/** What both loops must answer for an N-step task: the server quotes the last calculator result. */
const expectedAnswer = async (steps) => (steps > 1 ? `last=${await calculate(`round(pi * ${steps - 1}^2, 2)`)}` : "last=none");
const taskInput = (steps, tag) => `Compute the areas of circles of radius 1, 2, 3... steps=${steps}${tag ? ` tag=${tag}` : ""}`;

/** One task through the library (imported when first used, so a baseline-only process never loads it). */
async function runtimeTask(team, traceDir, trace, steps, tag) {
  const { runTeam } = await dist("index.js");
  const run = runTeam(team, { input: taskInput(steps, tag), traceDir, trace });
  const result = await run.result;
  if (result.result_type !== "answer" || result.answer !== (await expectedAnswer(steps))) {
    throw new Error(`runtime task failed: ${result.error ?? result.answer}`);
  }
}

const BASELINE_SYSTEM = "You solve arithmetic problems with the calculator tool, one call per step, then answer with the JSON protocol.";
const BASELINE_TOOLS = [
  {
    type: "function",
    function: {
      name: "calculator",
      description: "Evaluate an arithmetic expression.",
      parameters: {
        type: "object",
        properties: { expression: { type: "string" } },
        required: ["expression"],
        additionalProperties: false,
      },
    },
  },
];

/** One task through a minimal hand-written loop over the `openai` package, on its own transport (Node's fetch). */
async function baselineTask(url, steps, tag, stream = STREAM) {
  const client = new OpenAI({ apiKey: "bench-key", baseURL: url, maxRetries: 0 });
  return loop(steps, tag, async (body) => {
    if (!stream) return (await client.chat.completions.create(body)).choices[0].message;
    const message = newMessage();
    for await (const chunk of await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } })) {
      addDelta(message, chunk);
    }
    return message;
  });
}

/** The floor's own keep-alive dispatcher. */
const floorAgent = new Agent();

/** One task through the same loop with no client library: JSON over undici's `request()`. */
async function floorTask(url, steps, tag, stream = STREAM) {
  return loop(steps, tag, async (body) => {
    const res = await request(`${url}/chat/completions`, {
      method: "POST",
      headers: { authorization: "Bearer bench-key", "content-type": "application/json" },
      body: JSON.stringify(stream ? { ...body, stream: true, stream_options: { include_usage: true } } : body),
      dispatcher: floorAgent,
    });
    if (res.statusCode !== 200) throw new Error(`floor task got status ${res.statusCode}`);
    if (!stream) return (await res.body.json()).choices[0].message;
    const message = newMessage();
    for (const event of (await res.body.text()).split("\n\n")) {
      if (event.startsWith("data: ") && event !== "data: [DONE]") addDelta(message, JSON.parse(event.slice(6)));
    }
    return message;
  });
}

const newMessage = () => ({ role: "assistant", content: "", tool_calls: [] });

/** Adds a streamed chunk's delta to the message being put together. */
function addDelta(message, chunk) {
  const delta = chunk.choices[0]?.delta;
  if (!delta) return;
  if (delta.content) message.content += delta.content;
  for (const call of delta.tool_calls ?? []) {
    const known = (message.tool_calls[call.index] ??= { id: call.id, type: "function", function: { name: "", arguments: "" } });
    if (call.function?.name) known.function.name = call.function.name;
    if (call.function?.arguments) known.function.arguments += call.function.arguments;
  }
}

/** The hand-written loop both baselines share; `complete` sends one request and returns the reply's message. */
async function loop(steps, tag, complete) {
  const messages = [
    { role: "user", content: taskInput(steps, tag) },
    { role: "system", content: BASELINE_SYSTEM },
  ];
  for (let i = 0; i < 40; i++) {
    const message = await complete({ model: "bench-model", messages, tools: BASELINE_TOOLS });
    if (message.tool_calls?.length === 0) delete message.tool_calls;
    messages.push(message);
    if (!message.tool_calls?.length) {
      const answer = JSON.parse(message.content).action.result.output.answer;
      if (answer !== (await expectedAnswer(steps))) throw new Error(`baseline task got ${answer}`);
      return;
    }
    for (const call of message.tool_calls) {
      const { expression } = JSON.parse(call.function.arguments);
      const result = await calculate(expression);
      messages.push({ role: "tool", tool_call_id: call.id, content: JSON.stringify({ expression, result }) });
    }
  }
  throw new Error("baseline task did not finish");
}

// ---------------------------------------------------------------- the measurements

async function sequential(variants) {
  const samples = Object.fromEntries(variants.map((v) => [v.name, { wall: [], cpu: [] }]));
  // Interleaved, so that drift (GC, JIT, the machine) hits every variant alike.
  for (let i = 0; i < TASKS; i++) {
    for (const v of variants) {
      const m = await measure(() => v.task(STEPS));
      samples[v.name].wall.push(m.wall);
      samples[v.name].cpu.push(m.cpu);
    }
  }
  return samples;
}

/** `count` rounds of CONCURRENCY tasks at once, variants in turn: each round's wall and CPU, by variant. */
async function concurrent(variants, count = ROUNDS) {
  const rounds = Object.fromEntries(variants.map((v) => [v.name, []]));
  for (let r = 0; r < count; r++) {
    for (const v of variants) {
      const m = await measure(() => Promise.all(Array.from({ length: CONCURRENCY }, () => v.task(STEPS))));
      rounds[v.name].push(m);
    }
  }
  return rounds;
}

/**
 * Peak RSS of one variant running MEMORY_CONCURRENCY tasks at once, in a fresh process.
 * Asynchronous, so that this process's idle connections see the server's keep-alive closes meanwhile.
 */
async function memoryOf(variant, server, teamFile, traceDir) {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [
      fileURLToPath(import.meta.url),
      "--memory-child",
      variant,
      "--url",
      server.url,
      "--team",
      teamFile,
      "--trace-dir",
      traceDir,
      "--steps",
      String(STEPS),
      "--memory-concurrency",
      String(MEMORY_CONCURRENCY),
      "--dist",
      DIST,
      ...(STREAM ? ["--stream"] : []),
    ],
    { encoding: "utf8", maxBuffer: 1 << 20 },
  );
  return JSON.parse(stdout);
}

/** In the child: warm up, then MEMORY_CONCURRENCY tasks at once; prints RSS figures (MB) as JSON. */
async function memoryChild(variant) {
  let task;
  if (variant === "baseline") task = (n) => baselineTask(values.url, n);
  else {
    const { loadTeam } = await dist("index.js");
    const team = await loadTeam(values.team);
    task = (n) => runtimeTask(team, values["trace-dir"], variant === "trace-on", n);
  }
  for (let i = 0; i < 5; i++) await task(STEPS);
  globalThis.gc?.();
  const idle = process.memoryUsage().rss;
  let peak = idle;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  await Promise.all(Array.from({ length: MEMORY_CONCURRENCY }, () => task(STEPS)));
  clearInterval(timer);
  const MB = 1024 * 1024;
  const maxRss = (process.resourceUsage().maxRSS * 1024) / MB;
  process.stdout.write(JSON.stringify({ idle: idle / MB, peak: Math.max(peak / MB, maxRss), added: Math.max(peak / MB, maxRss) - idle / MB }));
}

function growth(requests) {
  const bytes = requests.map((r) => r.bytes);
  const inc = bytes.slice(1).map((b, i) => b - bytes[i]);
  // The first increment also carries the switch of {{current_state}} from "none" to a last result.
  const steady = inc.length > 1 ? inc.slice(1) : inc;
  const min = Math.min(...steady);
  const max = Math.max(...steady);
  return { bytes, inc, min, max, ratio: max / min };
}

// ---------------------------------------------------------------- main

if (values["memory-child"]) {
  await memoryChild(values["memory-child"]);
  process.exit(0);
}

const { loadTeam, runTeam } = await dist("index.js");
// The trace store moved (src/store/sqlite/); a --dist of a build from before the move has it in trace/.
const { TraceStore } = await dist("store/sqlite/trace-store.js").catch(() => dist("trace/store.js"));
const server = await startChatServer(LATENCY);
const dir = mkdtempSync(join(tmpdir(), "bench-react-loop-"));
const teamFile = join(dir, "team.yaml");
writeFileSync(teamFile, benchTeamYaml(server.url, "bench-react-loop", { stream: STREAM }));
const team = await loadTeam(teamFile);
const traceDir = join(dir, "traces");
// Held open for the whole run, as the CLI and the server hold theirs: every run shares it (src/store/sqlite/store.ts).
const { sqliteStore } = await import("../dist/store/sqlite/store.js");
const held = sqliteStore(traceDir);
await held.ping();

/** The four variants, each reply streamed or not. */
const variantsOf = (team, stream) => [
  { name: "baseline (openai loop)", task: (n, tag) => baselineTask(server.url, n, tag, stream) },
  { name: "runTeam, trace off", task: (n, tag) => runtimeTask(team, traceDir, false, n, tag) },
  { name: "runTeam, trace on", task: (n, tag) => runtimeTask(team, traceDir, true, n, tag) },
  // For reference, not an aim: the floor, the same loop with no client library on undici's request().
  { name: "undici request() loop (floor)", task: (n, tag) => floorTask(server.url, n, tag, stream), reference: true },
];
const variants = variantsOf(team, STREAM);
const BASE = variants[0].name;
const FLOOR = variants[3].name;
const TRACED = variants[2].name;

try {
  const started = performance.now();
  console.log(
    `react-loop: ${STEPS}-step tool loop (${STEPS} model calls, ${STEPS - 1} calculator calls), ` +
      `${TASKS} sequential tasks per variant, ${ROUNDS} round(s) of ${CONCURRENCY} concurrent, ` +
      `model latency ${LATENCY} ms, ${STREAM ? "streamed" : "not streamed"}, runtime ${DIST}, ` +
      `node ${process.version}${QUICK ? ", --quick" : ""}`,
  );
  console.log(`   ${loadLine()}\n`);

  // Warm-up: module loading, connection pools, the trace database, then the JIT, which keeps
  // optimising for a process's first few hundred tasks (docs/performance.md#warming-up). In whole
  // batches, so that the first and the last, printed, compare: a nearly cold process beside a warm one.
  for (let i = 0; i < 3; i++) for (const v of variants) await v.task(STEPS);
  const batches = Math.ceil(WARMUP / CONCURRENCY);
  const warmed = await concurrent(variants, batches);
  const warming = Object.fromEntries(variants.map(({ name }) => [name, warmed[name].map((m) => m.cpu / CONCURRENCY)]));
  if (batches < 2) console.log(`0. Warming up: ${batches * CONCURRENCY} tasks per variant (under two batches: no first and last to compare)\n`);
  else {
    console.log(
      `0. Warming up: ${batches * CONCURRENCY} tasks per variant, ${CONCURRENCY} at once, variants in turn, after 3 one at a time; CPU per task of the first and last batch`,
    );
    printTable(
      ["variant", "first batch ms", "last batch ms", "first ratio", "last ratio"],
      variants.map(({ name }) => [
        name,
        fixed(warming[name][0]),
        fixed(warming[name][batches - 1]),
        `${fixed(warming[name][0] / warming[BASE][0])}×`,
        `${fixed(warming[name][batches - 1] / warming[BASE][batches - 1])}×`,
      ]),
    );
    console.log("");
  }

  if (!values.throughput) {
    // 1 and 2
    const seq = await sequential(variants);
    const baseWall = median(seq[BASE].wall);
    const baseCpu = median(seq[BASE].cpu);
    console.log(`1. Wall time, sequential tasks (median of ${TASKS})`);
    printTable(
      ["variant", "ms/task", "ms/step", "overhead ms/step", "ratio"],
      variants.map(({ name }) => {
        const wall = median(seq[name].wall);
        return [name, fixed(wall), fixed(wall / STEPS, 3), name === BASE ? "-" : fixed((wall - baseWall) / STEPS, 3), `${fixed(wall / baseWall)}×`];
      }),
    );
    console.log(`\n2. CPU per task (this process, user+system; median of ${TASKS})`);
    printTable(
      ["variant", "CPU ms/task", "CPU ms/step", "ratio"],
      variants.map(({ name }) => {
        const cpu = median(seq[name].cpu);
        return [name, fixed(cpu), fixed(cpu / STEPS, 3), `${fixed(cpu / baseCpu)}×`];
      }),
    );
  }

  // 3, and unless --stream, the same variants streamed in the same rounds (interleaved, so
  // drift hits both modes alike; warmed first, as section 0 warmed the others)
  const streamed = [];
  if (!STREAM) {
    const streamFile = join(dir, "team-streamed.yaml");
    writeFileSync(streamFile, benchTeamYaml(server.url, "bench-react-loop", { stream: true }));
    for (const v of variantsOf(await loadTeam(streamFile), true)) streamed.push({ ...v, name: `${v.name}, streamed`, plain: v.name });
    await concurrent(streamed, Math.max(2, Math.ceil(WARMUP / CONCURRENCY)));
  }
  const conc = await concurrent([...variants, ...streamed]);
  const tps = (name) => CONCURRENCY / (median(conc[name].map((m) => m.wall)) / 1000);
  const cpuPerTask = (name) => median(conc[name].map((m) => m.cpu)) / CONCURRENCY;
  const baseTps = tps(BASE);
  console.log(`\n3. Throughput, ${CONCURRENCY} concurrent tasks (median of ${ROUNDS} round(s))${STREAM ? ", streamed" : ""}`);
  printTable(
    ["variant", "tasks/s", "baseline/variant", "CPU ms/task", "variant/baseline", `both within ${AIM}×`],
    variants.map(({ name, reference }) => {
      const ratio = baseTps / tps(name);
      const cpuRatio = cpuPerTask(name) / cpuPerTask(BASE);
      const within = ratio <= AIM && cpuRatio <= AIM;
      return [
        name,
        fixed(tps(name), 1),
        `${fixed(ratio)}×`,
        fixed(cpuPerTask(name)),
        `${fixed(cpuRatio)}×`,
        name === BASE || reference ? "-" : within ? "yes" : "NO",
      ];
    }),
  );

  // 7
  const modes = [{ label: STREAM ? "streamed" : "not streamed", name: (n) => n }];
  if (streamed.length > 0) {
    modes.push({ label: "streamed", name: (n) => `${n}, streamed` });
    console.log(`\n3s. Throughput, ${CONCURRENCY} concurrent tasks, streamed, in the same rounds (median of ${ROUNDS} round(s))`);
    printTable(
      ["variant", "tasks/s", "CPU ms/task", "CPU vs not streamed"],
      streamed.map(({ name, plain }) => [name, fixed(tps(name), 1), fixed(cpuPerTask(name)), `${fixed(cpuPerTask(name) / cpuPerTask(plain))}×`]),
    );
  }
  console.log(
    `\n7. Against the floor (the loop on undici request()), ${CONCURRENCY} at once: CPU per task and tasks/s as ratios to the floor of the same mode`,
  );
  printTable(
    ["mode", "floor CPU ms", "openai loop", "runtime (trace, journal)", "runtime tasks/s", "floor tasks/s", "runtime within 2× floor CPU"],
    modes.map(({ label, name }) => {
      const ratio = cpuPerTask(name(TRACED)) / cpuPerTask(name(FLOOR));
      return [
        label,
        fixed(cpuPerTask(name(FLOOR))),
        `${fixed(cpuPerTask(name(BASE)) / cpuPerTask(name(FLOOR)))}×`,
        `${fixed(ratio)}×`,
        fixed(tps(name(TRACED)), 1),
        fixed(tps(name(FLOOR)), 1),
        ratio <= 2 ? "yes" : "NO",
      ];
    }),
  );

  // 8
  if (values.profile) {
    const parts = await profileParts(() => concurrent([variants[2]]));
    const total = cpuPerTask(TRACED);
    console.log(
      `\n8. Where the runtime's CPU goes (trace on, ${CONCURRENCY} at once, ${ROUNDS} round(s) under the sampling profiler; ms from section 3's CPU per task)`,
    );
    printTable(
      ["part", "share", "ms/task"],
      parts.map(([name, share]) => [name, `${fixed(share * 100, 1)}%`, fixed(share * total)]),
    );
  }

  if (!values.throughput) {
    // 4
    const memoryVariants = [
      { key: "baseline", name: variants[0].name },
      { key: "trace-off", name: variants[1].name },
      { key: "trace-on", name: variants[2].name },
    ];
    const memory = {};
    for (const v of memoryVariants) memory[v.key] = await memoryOf(v.key, server, teamFile, join(dir, "memory-traces"));
    console.log(`\n4. Memory, ${MEMORY_CONCURRENCY} concurrent tasks, each variant in its own process (peak RSS)`);
    printTable(
      ["variant", "RSS idle MB", "peak RSS MB", "added MB", "peak ratio", "within 1.5×"],
      memoryVariants.map(({ key, name }) => {
        const m = memory[key];
        const ratio = m.peak / memory.baseline.peak;
        return [name, fixed(m.idle, 0), fixed(m.peak, 0), fixed(m.added, 0), `${fixed(ratio)}×`, key === "baseline" ? "-" : ratio <= 1.5 ? "yes" : "NO"];
      }),
    );

    // 5
    console.log("\n5. Request bytes per recursion");
    const layouts = [];
    for (const n of [10, 30]) {
      await runtimeTask(team, traceDir, false, n, `rt${n}`);
      await baselineTask(server.url, n, `base${n}`);
      const rt = await server.stats(`rt${n}`);
      const base = await server.stats(`base${n}`);
      if (rt.length !== n) throw new Error(`expected ${n} runtime requests, the server saw ${rt.length}`);
      const badLayout = rt.filter((r, i) => r.system !== 1 || r.first_role !== "user" || r.assistant !== i);
      layouts.push({ n, rt: growth(rt), base: growth(base), badLayout: badLayout.length });
    }
    for (const { n, rt, base } of layouts) {
      const every = n <= 10 ? 1 : 5;
      const shown = rt.bytes.map((_, i) => i).filter((i) => (i + 1) % every === 0 || i === 0 || i === n - 1);
      console.log(`\n   ${n} recursions: request bytes (runtime | baseline transcript for reference)`);
      printTable(
        ["request", "runtime bytes", "+Δ", "baseline bytes", "+Δ"],
        shown.map((i) => [`#${i + 1}`, rt.bytes[i], i ? rt.inc[i - 1] : "-", base.bytes[i] ?? "-", i && base.inc[i - 1] !== undefined ? base.inc[i - 1] : "-"]),
      );
    }
    console.log();
    printTable(
      ["recursions", "first Δ", "min Δ", "max Δ", "max/min", "runtime total", "baseline total", "one system msg", "linear"],
      layouts.map(({ n, rt, base, badLayout }) => [
        n,
        rt.inc[0],
        rt.min,
        rt.max,
        fixed(rt.ratio, 3),
        rt.bytes.reduce((a, b) => a + b, 0),
        base.bytes.reduce((a, b) => a + b, 0),
        badLayout === 0 ? "yes" : `NO (${badLayout} requests)`,
        rt.ratio <= 1.2 ? "yes" : "NO",
      ]),
    );
    const [g10, g30] = layouts;
    console.log(
      `   mean Δ over recursions 2..10: ${fixed(mean(g10.rt.inc.slice(1)), 1)} B; ` +
        `over 21..30 of the 30-recursion task: ${fixed(mean(g30.rt.inc.slice(20)), 1)} B (equal means linear growth)`,
    );

    // 6
    const events = [];
    const run = runTeam(team, { input: taskInput(STEPS), traceDir, trace: false, sinks: [(e) => events.push(e)] });
    await run.result;
    const appends = traceAppends(join(dir, "append-probe"), events, QUICK ? 1500 : 5000);
    console.log(`\n6. Trace store: ${events.length} events per ${STEPS}-step task; TraceStore.append on them, ${appends.count} appends`);
    printTable(
      ["mean ms", "median ms", "p99 ms", "max ms", "share of time in slowest 1%", "est. ms/task", "est. ms/step"],
      [
        [
          fixed(appends.mean, 3),
          fixed(appends.median, 3),
          fixed(appends.p99),
          fixed(appends.max, 1),
          `${fixed(appends.topShare * 100, 0)}%`,
          fixed(appends.mean * events.length),
          fixed((appends.mean * events.length) / STEPS, 3),
        ],
      ],
    );
    console.log("   (each append is its own committed transaction; the slow tail is mostly SQLite's WAL auto-checkpoint, which fsyncs inside an append)");
  }

  console.log(`\n${loadLine()}`);
  console.log(`react-loop finished in ${fixed((performance.now() - started) / 1000, 1)} s`);
} finally {
  await held.close();
  server.stop();
  rmSync(dir, { recursive: true, force: true });
}

/** Replay one task's events (under fresh task ids) into a new store, timing each append. */
function traceAppends(storeDir, events, count) {
  const store = TraceStore.open(storeDir);
  const times = [];
  try {
    for (let i = 0; times.length < count; i++) {
      for (const e of events) {
        if (times.length >= count) break;
        const event = { ...e, task_id: `${e.task_id}-${i}` };
        const t = performance.now();
        store.append(event);
        times.push(performance.now() - t);
      }
    }
  } finally {
    store.close();
  }
  const sorted = [...times].sort((a, b) => a - b);
  const total = sorted.reduce((a, b) => a + b, 0);
  const top = sorted.slice(Math.floor(sorted.length * 0.99));
  return {
    count: times.length,
    mean: total / times.length,
    median: median(times),
    p99: sorted[Math.floor(sorted.length * 0.99)],
    max: sorted[sorted.length - 1],
    topShare: top.reduce((a, b) => a + b, 0) / total,
  };
}

function mean(values) {
  return values.reduce((a, b) => a + b, 0) / values.length;
}
