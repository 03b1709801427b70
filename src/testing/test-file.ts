/**
 * An agent test file (`*.test.yaml`, docs/testing.md): read through the one
 * YAML loader (`config/yaml-file.ts`: its size, nesting, alias and
 * prototype-key limits), checked against `schemas/agent-test.schema.json`, and resolved: paths made
 * absolute, defaults filled, regexes compiled. Every problem is located as
 * `FILE:LINE:COL /pointer message`, like `runtime validate`'s.
 */
import { dirname, resolve } from "node:path";
import { pointer, type SourceMap } from "../config/source.js";
import { loadYamlText, readYamlFile, type YamlFileKind } from "../config/yaml-file.js";
import { ConfigError, describeError, type ConfigProblem } from "../errors.js";
import type { ScriptReply } from "../models/script-format.js";
import { AGENT_TEST_WORDS, agentTestValidator } from "./schema.js";

/** A text matcher: every key given must hold. */
export interface TextMatcher {
  equals?: string;
  contains?: string | string[];
  matches?: string;
}

/** How one argument is compared; a plain value in the file is `{ equals: value }`. */
export type ValueMatcher = { equals: unknown } | { contains: unknown } | { matches: string };

export interface CallMatcher {
  name: string;
  agent?: string;
  arguments: Record<string, ValueMatcher>;
}

export interface CallsExpectation {
  order: "in_order" | "any_order";
  /** No calls besides those listed. @default true */
  exact: boolean;
  calls: CallMatcher[];
}

export interface Expectations {
  /** @default "answer", or "error" when `error` is given */
  result: "answer" | "error" | "paused" | "blocked";
  answer?: TextMatcher;
  error?: TextMatcher;
  tool_calls?: CallsExpectation;
  todos?: { count?: number; all?: string; completed?: number };
  plan?: { steps?: number; finished?: number; status?: string; tasks?: Record<string, string> };
  budget?: { max_model_calls?: number; max_tool_calls?: number; max_tokens?: number };
  /** A model judges the answer (and the tool calls, with `trajectory`) against the rubric (docs/testing.md#judged-cases). */
  judge?: { rubric: string; model: string; trajectory: boolean };
}

/** Where the model's replies come from: inline, or a scripted-model file. */
export type RepliesSource = { kind: "inline"; replies: ScriptReply[] } | { kind: "recording"; file: string };

export interface TestCase {
  name: string;
  agent?: string;
  input: string;
  replies: RepliesSource;
  expect: Expectations;
  /** The share of `--repeat` runs that must pass. @default 1 */
  pass_rate: number;
  /** Where the case starts in its file (for reports). */
  line: number;
}

export interface TestFile {
  file: string;
  /** The team file, absolute. */
  team: string;
  cases: TestCase[];
}

/** Reads, checks and resolves a test file; throws a ConfigError listing every problem. */
export async function loadTestFile(file: string): Promise<TestFile> {
  const { test, problems } = await readTestFile(file);
  if (problems.length > 0) throw new ConfigError(problems);
  return test;
}

/**
 * `loadTestFile` for callers that check more (the runner: agents, recordings)
 * and report everything at once: a file that cannot be read, parsed or fails
 * the schema throws; later problems (a bad regex) come back with the file.
 */
export async function readTestFile(file: string): Promise<{ test: TestFile; problems: ConfigProblem[] }> {
  return parseTestFile(readYamlFile(file, TEST_FILE), file);
}

/** Parses test file text; `file` names it in problems and anchors its relative paths. */
export function parseTestFile(text: string, file: string): { test: TestFile; problems: ConfigProblem[] } {
  const { value: raw, source } = loadYamlText<RawTestFile>(text, file, TEST_FILE);
  const problems: ConfigProblem[] = [];
  const dir = dirname(resolve(file));
  const cases = raw.cases.map((c, i) => resolveCase(c, i, dir, source, problems));
  return { test: { file, team: resolve(dir, raw.team), cases }, problems };
}

/** What a test file is to the YAML loader; test inputs and replies are taken as written (`${VAR}` is not replaced). */
const TEST_FILE: YamlFileKind = {
  noun: "a test file",
  expected: "a mapping with version, team and cases",
  schema: { validate: agentTestValidator, words: AGENT_TEST_WORDS },
};

interface RawTestFile {
  version: 1;
  team: string;
  cases: RawCase[];
}

interface RawCase {
  name: string;
  agent?: string;
  input: string;
  replies?: ScriptReply[];
  recording?: string;
  pass_rate?: number;
  expect?: {
    result?: Expectations["result"];
    answer?: TextMatcher;
    error?: TextMatcher;
    tool_calls?: RawCall[] | { in_order?: RawCall[]; any_order?: RawCall[]; exact?: boolean };
    todos?: Expectations["todos"];
    plan?: Expectations["plan"];
    budget?: Expectations["budget"];
    judge?: { rubric: string; model: string; trajectory?: boolean };
  };
}

type RawCall = string | { name: string; agent?: string; arguments?: Record<string, unknown> };

function resolveCase(raw: RawCase, index: number, dir: string, source: SourceMap, problems: ConfigProblem[]): TestCase {
  const at = (...path: Array<string | number>) => pointer("cases", index, ...path);
  const regex = (text: string | undefined, where: string) => {
    if (text === undefined) return;
    try {
      new RegExp(text);
    } catch (err) {
      problems.push(source.problem(where, `invalid regex: ${describeError(err)}`));
    }
  };
  raw.replies?.forEach((reply, i) => {
    regex(reply.match, at("replies", i, "match"));
  });
  const expect = raw.expect ?? {};
  regex(expect.answer?.matches, at("expect", "answer", "matches"));
  regex(expect.error?.matches, at("expect", "error", "matches"));

  let tool_calls: CallsExpectation | undefined;
  if (expect.tool_calls !== undefined) {
    const given = expect.tool_calls;
    const order = Array.isArray(given) || given.in_order !== undefined ? "in_order" : "any_order";
    const list = Array.isArray(given) ? given : (given.in_order ?? given.any_order ?? []);
    const base = Array.isArray(given) ? at("expect", "tool_calls") : at("expect", "tool_calls", order);
    const calls = list.map((call, i): CallMatcher => {
      if (typeof call === "string") return { name: call, arguments: {} };
      const args: Record<string, ValueMatcher> = {};
      for (const [name, value] of Object.entries(call.arguments ?? {})) {
        const matcher = toMatcher(value);
        if ("matches" in matcher) regex(matcher.matches, `${base}/${i}/arguments/${name}/matches`);
        args[name] = matcher;
      }
      return { name: call.name, ...(call.agent !== undefined ? { agent: call.agent } : {}), arguments: args };
    });
    tool_calls = { order, exact: Array.isArray(given) ? true : (given.exact ?? true), calls };
  }

  const replies: RepliesSource =
    raw.recording !== undefined ? { kind: "recording", file: resolve(dir, raw.recording) } : { kind: "inline", replies: raw.replies ?? [] };
  return {
    name: raw.name,
    ...(raw.agent !== undefined ? { agent: raw.agent } : {}),
    input: raw.input,
    replies,
    pass_rate: raw.pass_rate ?? 1,
    expect: {
      result: expect.result ?? (expect.error !== undefined ? "error" : "answer"),
      ...(expect.answer ? { answer: expect.answer } : {}),
      ...(expect.error ? { error: expect.error } : {}),
      ...(tool_calls ? { tool_calls } : {}),
      ...(expect.todos ? { todos: expect.todos } : {}),
      ...(expect.plan ? { plan: expect.plan } : {}),
      ...(expect.budget ? { budget: expect.budget } : {}),
      ...(expect.judge ? { judge: { rubric: expect.judge.rubric, model: expect.judge.model, trajectory: expect.judge.trajectory === true } } : {}),
    },
    line: source.position(at()).line,
  };
}

/** A mapping with one of equals, contains, matches is a matcher (the schema checked that); anything else must be equal. */
function toMatcher(value: unknown): ValueMatcher {
  if (value !== null && typeof value === "object" && !Array.isArray(value)) return value as ValueMatcher;
  return { equals: value };
}
