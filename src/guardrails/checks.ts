/**
 * The checks a guardrail can make (docs/guardrails.md#checks): each looks at
 * one text and says whether it trips, why, and (deny, pii) where, so that
 * `redact` can mask it. A check that cannot run (a program that crashes, a
 * module that throws, a judge that does not answer) trips: a guardrail
 * fails closed.
 */
import type { Guardrail, GuardrailCheck } from "../config/types.js";
import { describeError, RuntimeError } from "../errors.js";
import { parseJsonTolerant } from "../parse/json.js";
import { runProgram } from "../tools/command.js";
import { loadTeamModule } from "../tools/module.js";
import { argsValidator } from "../tools/validate-args.js";
import { findMatches } from "./matches.js";

/** What a check is given, and what a command or module check sees as JSON. */
export interface Subject {
  on: Guardrail["on"];
  text: string;
  agent: string;
  tool?: string;
}

/** Why a check tripped, and where the text it objects to is (for `redact`). */
export interface Trip {
  reason: string;
  spans?: Array<[number, number]>;
}

/** What the checks need from the run: the one model path, for a judge. */
export interface CheckPorts {
  judge(model: string, rubric: string, subject: Subject): Promise<{ pass: boolean; reason: string }>;
  signal: AbortSignal;
}

/** Caps of a command check's output; its timeout is the guardrail's. */
const COMMAND_MAX_OUTPUT = 64 * 1024;

export async function runCheck(check: GuardrailCheck, subject: Subject, ports: CheckPorts): Promise<Trip | undefined> {
  const { text } = subject;
  switch (check.kind) {
    case "deny":
    case "pii":
      return findMatches(check, text);
    case "max_chars":
      return text.length > check.max ? { reason: `${text.length} characters, more than ${check.max}` } : undefined;
    case "json_schema": {
      const parsed = parseJsonTolerant(text, { whole: "always", fences: "whole" });
      if (!parsed.ok) return { reason: `not JSON${parsed.error ? ` (${parsed.error})` : ""}` };
      const wrong = argsValidator.mismatch(check.schema, parsed.value);
      return wrong === undefined ? undefined : { reason: `does not match the schema: ${wrong}` };
    }
    case "command":
      return commandCheck(check, subject, ports.signal);
    case "module":
      return moduleCheck(check.path, subject);
    case "model": {
      const verdict = await ports.judge(check.model, check.rubric, subject);
      return verdict.pass ? undefined : { reason: verdict.reason || "the judge said it fails the rubric" };
    }
  }
}

async function commandCheck(check: Extract<GuardrailCheck, { kind: "command" }>, subject: Subject, signal: AbortSignal): Promise<Trip | undefined> {
  const spec = {
    command: check.command,
    cwd: check.cwd,
    env: {},
    timeout_ms: check.timeout_ms,
    max_output_bytes: COMMAND_MAX_OUTPUT,
    ...(check.sandbox ? { sandbox: check.sandbox } : {}),
    what: "guardrail command",
  };
  let ran: Awaited<ReturnType<typeof runProgram>>;
  try {
    ran = await runProgram(spec, subject, signal);
  } catch (err) {
    if (err instanceof RuntimeError && err.code === "ABORTED") throw err;
    return { reason: `the check failed: ${describeError(err)}` };
  }
  if (ran.code === 0) return undefined;
  const said = ran.stdout.trim().split("\n").slice(0, 5).join(" ").slice(0, 500);
  if (ran.code === 1) return { reason: said || "the check said no" };
  const why = ran.code === null ? `was killed by ${ran.signal ?? "a signal"}` : `exited with code ${ran.code}`;
  return { reason: `the check failed: it ${why}${ran.stderr.trim() ? `: ${ran.stderr.trim().split("\n").at(-1)?.slice(0, 300)}` : ""}` };
}

type ModuleCheck = (subject: Subject) => unknown;

async function moduleCheck(path: string, subject: Subject): Promise<Trip | undefined> {
  // The team's modules load one way (src/tools/module.ts): once, a failed load tried again.
  const loading = loadTeamModule<ModuleCheck>(path, "guardrail module", (m) =>
    typeof m.default === "function" ? (m.default as ModuleCheck) : "it has no default export function",
  );
  let verdict: unknown;
  try {
    verdict = await (await loading)(subject);
  } catch (err) {
    return { reason: `the check failed: ${describeError(err)}` };
  }
  const v = verdict as { pass?: unknown; reason?: unknown } | null;
  if (typeof v?.pass !== "boolean") return { reason: "the check failed: the module's function must return {pass: boolean, reason?: string}" };
  return v.pass ? undefined : { reason: typeof v.reason === "string" && v.reason ? v.reason : "the check said no" };
}
