/**
 * Judged cases (docs/testing.md#judged-cases): what a case's judge is shown
 * (the answer, and with `trajectory` the tool calls), asking it live, and
 * the verdicts `runtime test --record` stores beside the test file
 * (`NAME.test.verdicts.json`: data the runtime writes, not a team or test
 * file to edit), so an offline run reuses them with no key and
 * the same result every time. A stored verdict counts only for the rubric
 * and the text it was given: a changed answer must be judged again.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { ModelConfig } from "../config/types.js";
import { describeError, RuntimeError } from "../errors.js";
import { readVerdict, verdictRequest, type Verdict } from "../guardrails/judge.js";
import { createChatClient } from "../models/factory.js";
import type { Observed } from "./observe.js";
import type { Expectations } from "./test-file.js";

type Judge = NonNullable<Expectations["judge"]>;

/** A verdict as stored: for which rubric and which text, by whom. */
export interface StoredVerdict extends Verdict {
  rubric_sha256: string;
  judged_sha256: string;
  model: string;
}

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** The verdicts file of a test file. */
export function verdictsFile(testFile: string): string {
  return `${testFile.replace(/\.ya?ml$/, "")}.verdicts.json`;
}

/** What the judge is shown of a run. */
export function judgedText(judge: Judge, seen: Observed): string {
  const answer = seen.answer ?? seen.error ?? "";
  if (!judge.trajectory) return answer;
  const calls = seen.tool_calls.map((c) => ({
    agent: c.agent,
    tool: c.name,
    arguments: c.arguments,
    ...(c.error !== undefined ? { error: c.error } : { result: c.result }),
  }));
  return `Tool calls, in order:\n${JSON.stringify(calls, null, 2)}\n\nAnswer:\n${answer}`;
}

/** Ask the judge now, on the team's model `config`. */
export async function askJudge(config: ModelConfig, judge: Judge, text: string, signal: AbortSignal): Promise<StoredVerdict> {
  const client = createChatClient(config);
  const what = judge.trajectory ? "an agent's tool calls and answer" : "an agent's answer";
  const reply = await client.chat({ ...verdictRequest(judge.rubric, { text, what }), signal });
  return { ...readVerdict(reply.content), rubric_sha256: sha256(judge.rubric), judged_sha256: sha256(text), model: config.model };
}

/** The verdicts of a test file, by case name (none when it has no file yet). */
export function readVerdicts(testFile: string): Map<string, StoredVerdict> {
  const file = verdictsFile(testFile);
  if (!existsSync(file)) return new Map();
  let value: { verdicts?: Record<string, StoredVerdict> } | null;
  try {
    value = JSON.parse(readFileSync(file, "utf8")) as typeof value;
  } catch (err) {
    throw new RuntimeError("CONFIG_INVALID", `cannot read the verdicts in ${file}: ${describeError(err)} (runtime test --record writes it again)`);
  }
  return new Map(Object.entries(value?.verdicts ?? {}));
}

/** Store `verdict` as case `name`'s, keeping the file's others. */
export function storeVerdict(testFile: string, name: string, verdict: StoredVerdict): void {
  const all = Object.fromEntries(readVerdicts(testFile));
  all[name] = verdict;
  const about = "Judge verdicts recorded by `runtime test --record` (docs/testing.md#judged-cases); offline runs reuse them.";
  writeFileSync(verdictsFile(testFile), `${JSON.stringify({ about, version: 1, verdicts: all }, null, 2)}\n`, "utf8");
}

/**
 * The stored verdict for this rubric and text, or why there is none to use:
 * a verdict given for another answer is never reused.
 */
export function storedVerdict(stored: StoredVerdict | undefined, judge: Judge, text: string): { verdict: Verdict } | { problem: string } {
  if (!stored || stored.rubric_sha256 !== sha256(judge.rubric)) return { problem: "no recorded verdict for this rubric: run runtime test --record" };
  if (stored.judged_sha256 !== sha256(text)) return { problem: "the recorded verdict is for another answer; run runtime test --record" };
  return { verdict: { pass: stored.pass, reason: stored.reason } };
}

export function describeJudgeError(err: unknown): string {
  return `the judge could not be asked: ${describeError(err)}`;
}
