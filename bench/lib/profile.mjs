/**
 * Where a variant's CPU goes: its tasks run under V8's sampling profiler
 * (node:inspector, in this process) and each sample's own function is put in
 * one of a few parts of the path a task takes, by the file it comes from.
 * Self time only, so nothing is counted twice; idle samples are left out.
 */
import { Session } from "node:inspector/promises";

/** The parts, first match wins: [name, test on the sample's script URL and function name]. */
const PARTS = [
  ["openai client (request building, retries, parsing)", (url) => url.includes("/node_modules/openai/")],
  ["undici request() (HTTP on the wire)", (url) => url.includes("/node_modules/undici/")],
  [
    "fetch objects (Response, Headers, web streams, AbortSignal)",
    (url) => /node:internal\/(deps\/undici|webstreams|worker\/js_transferable|abort_controller|event_target)/.test(url),
  ],
  ["events, masking, projection", (url) => /\/dist\/(events\/|redact\.js)/.test(url)],
  ["journal and store (SQLite)", (url, fn) => /\/dist\/(engine\/journal|store\/)/.test(url) || /node_modules\/better-sqlite3/.test(url) || fn === "run"],
  ["engine, kinds, tools, templates", (url) => /\/dist\//.test(url) || url.includes("/node_modules/handlebars/")],
  ["garbage collection", (_url, fn) => fn === "(garbage collector)"],
  ["Node streams, timers, promises, JSON (shared by all)", () => true],
];

/** Runs `fn` under the profiler; resolves with [part, share of non-idle samples] sorted by share. */
export async function profileParts(fn) {
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.setSamplingInterval", { interval: 200 });
  await session.post("Profiler.start");
  let profile;
  try {
    await fn();
  } finally {
    ({ profile } = await session.post("Profiler.stop"));
    session.disconnect();
  }
  const selfTime = new Map();
  for (let i = 0; i < profile.samples.length; i++) selfTime.set(profile.samples[i], (selfTime.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const parts = new Map(PARTS.map(([name]) => [name, 0]));
  let total = 0;
  for (const node of profile.nodes) {
    const time = selfTime.get(node.id) ?? 0;
    const { url, functionName } = node.callFrame;
    if (time === 0 || functionName === "(idle)" || functionName === "(program)") continue;
    const [name] = PARTS.find(([, test]) => test(url, functionName));
    parts.set(name, parts.get(name) + time);
    total += time;
  }
  return [...parts].map(([name, time]) => [name, time / total]).sort((a, b) => b[1] - a[1]);
}
