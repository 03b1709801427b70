/**
 * Runs agent test files (docs/testing.md) in-process through `runTeam`: each
 * case on a scripted model fed from its replies or its recording (no network,
 * no key), in a fresh temporary trace directory, then its expectations are
 * held against the run's events. With `record`, a case with a `recording`
 * runs on the team's models as configured (live) and its file is rewritten.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadTeam } from "../config/load.js";
import type { ModelConfig, ResolvedTeam } from "../config/types.js";
import { costOf } from "../events/usage.js";
import { runTeam } from "../engine/run-team.js";
import { ConfigError, describeError, type ConfigProblem, unreachable } from "../errors.js";
import type { RunEvent } from "../events/types.js";
import { createChatClient } from "../models/factory.js";
import { recordingClient, type RecordedReply } from "../models/recorder.js";
import { loadScript, writeScript, type LoadedScript } from "../models/script-format.js";
import { scriptedClientFrom } from "../models/scripted-client.js";
import type { ChatClient } from "../models/types.js";
import { compare, type Difference } from "./expectations.js";
import { observe } from "./observe.js";
import { readTestFile, type TestCase, type TestFile } from "./test-file.js";
import { askJudge, describeJudgeError, judgedText, readVerdicts, storedVerdict, storeVerdict } from "./verdicts.js";

/** A test file ready to run: its team loaded, its recordings read. */
export interface PreparedFile {
  test: TestFile;
  team: ResolvedTeam;
  /** Loaded recordings by absolute path (none in record mode). */
  recordings: Map<string, LoadedScript>;
}

export interface CaseResult {
  file: string;
  name: string;
  /** Line of the case in its file. */
  line: number;
  passed: boolean;
  ms: number;
  differences: Difference[];
  /** The recording this case rewrote (record mode). */
  recorded?: string;
  /** How many times it ran (`--repeat`) and how many of those passed. */
  runs: number;
  passes: number;
  /** Tokens and cost (at the models' `price`) of every run of the case. */
  tokens: number;
  cost_usd: number;
  /** The model every agent ran on (`--models`). */
  model?: string;
}

export interface RunTestsOptions {
  /** Run `recording` cases on the team's live models and rewrite their files. @default false */
  record?: boolean;
  /** Run `recording` cases on the team's live models, rewriting nothing, and ask judges live (`--repeat`, `--models`). @default false */
  live?: boolean;
  /** Run each case this many times; it passes when its `pass_rate` of them do. @default 1 */
  repeat?: number;
  /** Run every agent on this model of the team (`--models`). */
  model?: string;
  /** A case that runs longer is stopped and fails. @default 120000 */
  caseTimeoutMs?: number;
  /** Told of each case as it finishes. */
  onCase?: (result: CaseResult) => void;
}

/**
 * Reads every test file, its team and its recordings; throws a ConfigError
 * with every problem of every file, so nothing runs when one is wrong.
 */
export async function prepareTestFiles(files: string[], options: Pick<RunTestsOptions, "record"> = {}): Promise<PreparedFile[]> {
  const problems: ConfigProblem[] = [];
  const prepared: PreparedFile[] = [];
  for (const file of files) {
    try {
      prepared.push(await prepareOne(file, options.record === true));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return prepared;
}

async function prepareOne(file: string, record: boolean): Promise<PreparedFile> {
  const { test, problems } = await readTestFile(file);
  const { problemAt } = await import("../config/yaml-file.js");
  let team: ResolvedTeam;
  if (!existsSync(test.team)) throw new ConfigError([...problems, problemAt(test.file, "/team", `team file ${test.team} not found`)]);
  try {
    team = await loadTeam(test.team);
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError([...problems, ...err.problems]);
    throw new ConfigError([...problems, problemAt(test.file, "/team", `cannot load the team: ${describeError(err)}`)]);
  }
  const recordings = new Map<string, LoadedScript>();
  for (const [i, c] of test.cases.entries()) {
    const judge = c.expect.judge?.model;
    if (judge !== undefined && !team.models[judge]) {
      problems.push(problemAt(test.file, `/cases/${i}/expect/judge/model`, `unknown model '${judge}' (models: ${Object.keys(team.models).join(", ")})`));
    }
    if (c.agent !== undefined && !team.agents[c.agent]) {
      problems.push(problemAt(test.file, `/cases/${i}/agent`, `unknown agent '${c.agent}' (agents: ${Object.keys(team.agents).join(", ")})`));
    }
    if (c.replies.kind !== "recording" || record || recordings.has(c.replies.file)) continue;
    // A missing recording is the test file's mistake: say where it names it.
    if (!existsSync(c.replies.file)) {
      const message = `recording ${c.replies.file} not found (make it with runtime exec --record FILE, or runtime test --record)`;
      problems.push(problemAt(test.file, `/cases/${i}/recording`, message));
      continue;
    }
    try {
      recordings.set(c.replies.file, loadScript(c.replies.file));
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems.sort((a, b) => a.line - b.line || a.col - b.col));
  return { test, team, recordings };
}

/** Runs every case of the prepared files, one after the other. */
export async function runTests(prepared: PreparedFile[], options: RunTestsOptions = {}): Promise<CaseResult[]> {
  const results: CaseResult[] = [];
  for (const given of prepared) {
    const file = options.model === undefined ? given : { ...given, team: onModel(given.team, options.model) };
    for (const c of file.test.cases) {
      const result = await repeated(file, c, options);
      results.push(result);
      options.onCase?.(result);
    }
  }
  return results;
}

const priceOf = (model: ModelConfig | undefined) => (model !== undefined && model.provider !== "scripted" ? model.price : undefined);

/** The team with every agent on `model` (`runtime test --models`). */
function onModel(team: ResolvedTeam, model: string): ResolvedTeam {
  const agents = Object.fromEntries(Object.entries(team.agents).map(([name, agent]) => [name, { ...agent, model }]));
  return { ...team, agents: agents as ResolvedTeam["agents"] };
}

/**
 * A case run `repeat` times: it passes when at least its `pass_rate` of the
 * runs do; the differences shown are the last failing run's.
 */
async function repeated(file: PreparedFile, c: TestCase, options: RunTestsOptions): Promise<CaseResult> {
  const times = options.repeat ?? 1;
  const runs: CaseResult[] = [];
  for (let i = 0; i < times; i++) runs.push(await runCase(file, c, options));
  if (times === 1) return runs[0]!;
  const passes = runs.filter((r) => r.passed).length;
  const last = runs.findLast((r) => !r.passed) ?? runs[0]!;
  const passed = passes / times >= c.pass_rate;
  const sum = (f: (r: CaseResult) => number) => runs.reduce((n, r) => n + f(r), 0);
  return {
    ...last,
    passed,
    runs: times,
    passes,
    ms: sum((r) => r.ms),
    tokens: sum((r) => r.tokens),
    cost_usd: sum((r) => r.cost_usd),
    differences: passed ? [] : [{ what: "pass_rate", expected: `at least ${c.pass_rate} of ${times} runs`, actual: `${passes} passed` }, ...last.differences],
  };
}

/** Runs one case and compares; a case that cannot run fails with the reason as its difference. */
export async function runCase(file: PreparedFile, c: TestCase, options: RunTestsOptions = {}): Promise<CaseResult> {
  const started = performance.now();
  const base = {
    file: file.test.file,
    name: c.name,
    line: c.line,
    runs: 1,
    passes: 0,
    tokens: 0,
    cost_usd: 0,
    ...(options.model !== undefined ? { model: options.model } : {}),
  };
  const askLive = options.record === true || options.live === true;
  const live = askLive && c.replies.kind === "recording";
  const recorded: RecordedReply[] = [];
  const traceDir = await mkdtemp(join(tmpdir(), "runtime-test-"));
  const controller = new AbortController();
  const timeoutMs = options.caseTimeoutMs ?? 120_000;
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  try {
    const createClient = live
      ? (config: ModelConfig) => (options.record ? recordingClient(createChatClient(config), recorded) : createChatClient(config))
      : sharedScripted(scriptOf(file, c));
    const events: RunEvent[] = [];
    const run = runTeam(file.team, {
      input: c.input,
      ...(c.agent !== undefined ? { agent: c.agent } : {}),
      traceDir,
      signal: controller.signal,
      sinks: [(e) => events.push(e)],
      createClient,
    });
    await run.result;
    if (controller.signal.aborted) {
      return {
        ...base,
        passed: false,
        ms: elapsed(started),
        differences: [{ what: "run", expected: `to end within ${timeoutMs} ms`, actual: "stopped at the time limit" }],
      };
    }
    const seen = observe(events);
    let rewritten: string | undefined;
    // A live run that did not end as the case expects (a model that failed) keeps the old recording.
    if (live && options.record && c.replies.kind === "recording" && seen.result_type === c.expect.result) {
      writeScript(c.replies.file, recorded);
      rewritten = c.replies.file;
    }
    const differences = compare(c.expect, seen);
    if (c.expect.judge) {
      const judged = await judgeCase(file, c, seen, { ask: askLive, store: options.record === true }, controller.signal);
      if (judged) differences.push(judged);
    }
    if (live && options.record && !rewritten)
      differences.push({
        what: "recording",
        expected: `the live run to end with result ${c.expect.result}, to record it`,
        actual: `${seen.result_type}; ${c.replies.kind === "recording" ? c.replies.file : ""} left as it was`,
      });
    const spent = {
      tokens: seen.tokens,
      cost_usd: seen.replies.reduce((n, r) => n + costOf(r.usage, priceOf(Object.values(file.team.models).find((m) => m.model === r.model))), 0),
    };
    const passed = differences.length === 0;
    return { ...base, ...spent, passed, passes: passed ? 1 : 0, ms: elapsed(started), differences, ...(rewritten ? { recorded: rewritten } : {}) };
  } catch (err) {
    return { ...base, passed: false, ms: elapsed(started), differences: [{ what: "run", expected: "to run", actual: describeError(err) }] };
  } finally {
    clearTimeout(timer);
    await rm(traceDir, { recursive: true, force: true });
  }
}

/**
 * A judged case's verdict (docs/testing.md#judged-cases): asked live and
 * stored when recording, else the stored one for this answer; the
 * difference when it fails or cannot be had, undefined when it passes.
 */
async function judgeCase(
  file: PreparedFile,
  c: TestCase,
  seen: ReturnType<typeof observe>,
  mode: { ask: boolean; store: boolean },
  signal: AbortSignal,
): Promise<Difference | undefined> {
  const judge = c.expect.judge;
  if (!judge) return undefined;
  const text = judgedText(judge, seen);
  let verdict: { pass: boolean; reason: string };
  if (mode.ask) {
    const model = file.team.models[judge.model];
    if (!model) return { what: "judge", expected: `a model '${judge.model}' in the team`, actual: "none" };
    try {
      const asked = await askJudge(model, judge, text, signal);
      if (mode.store) storeVerdict(file.test.file, c.name, asked);
      verdict = asked;
    } catch (err) {
      return { what: "judge", expected: "a verdict", actual: describeJudgeError(err) };
    }
  } else {
    const stored = storedVerdict(readVerdicts(file.test.file).get(c.name), judge, text);
    if ("problem" in stored) return { what: "judge", expected: "a recorded verdict", actual: stored.problem };
    verdict = stored.verdict;
  }
  return verdict.pass ? undefined : { what: "judge", expected: `to satisfy: ${judge.rubric}`, actual: `fails: ${verdict.reason || "no reason given"}` };
}

/** The replies a case runs on: inline ones, or its recording. */
function scriptOf(file: PreparedFile, c: TestCase): LoadedScript {
  if (c.replies.kind === "recording") {
    const script = file.recordings.get(c.replies.file);
    if (!script) unreachable(`recording ${c.replies.file} was not loaded`);
    return script;
  }
  const replies = c.replies.replies;
  // The regexes were checked when the file was read.
  return {
    version: 1,
    replies,
    file: `${file.test.file} (case "${c.name}")`,
    patterns: replies.map((r) => (r.match === undefined ? undefined : new RegExp(r.match))),
  };
}

/**
 * Every model of the team answers from one script, as a recording of the
 * whole run was made: replies are picked by agent and `match`, whichever
 * model the agent names. A fresh consumption per case.
 */
function sharedScripted(script: LoadedScript): (config: ModelConfig) => ChatClient {
  const shared = scriptedClientFrom(script, { model: "scripted" });
  return (config) => ({
    model: config.model,
    chat: (request) => shared.chat(request),
    replayed: (request) => shared.replayed?.(request),
  });
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}
