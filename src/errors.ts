/**
 * Errors with a closed code union. "Your YAML or input is wrong" (ConfigError,
 * exit 2) is kept apart from "the run failed" (RuntimeError, exit 1) and from a bug.
 */
export type ErrorCode =
  /** The team file or another input is wrong (exit 2). */
  | "CONFIG_INVALID"
  /** The command line or a request is wrong (exit 2). */
  | "USAGE"
  | "MODEL_UNAVAILABLE"
  | "MODEL_BAD_REPLY"
  /** A request does not fit the model's `context_window`, even compacted (docs/context.md). */
  | "CONTEXT_TOO_LARGE"
  /** An agent used its `max_iteration` model calls without an answer. */
  | "MAX_ITERATION"
  /** A tool the run depends on failed (an MCP server that stopped, an agent called as a tool that failed). */
  | "TOOL_FAILED"
  | "TOOL_REFUSED"
  /** A tool call ran past its `timeout_ms`. */
  | "TOOL_TIMEOUT"
  /** The run was cancelled (Ctrl-C, a cancelled request, a lost lease). */
  | "ABORTED"
  | "BUDGET"
  /** An agent's answer could not be read as what was asked (a plan, a JSON object), even after a repair. */
  | "PARSE_FAILED"
  | "NOT_FOUND"
  | "PAUSED"
  /** A guardrail with action block tripped (docs/guardrails.md): the run ends `blocked`. */
  | "BLOCKED"
  | "REPLAY_DIVERGED"
  /** A database of the store (docs/scale-out.md) failed or could not be reached. */
  | "STORE"
  /** The agent ended its run as a failure itself (`terminate` with status failure). */
  | "GAVE_UP"
  /** A bug: something that is not a RuntimeError was thrown. */
  | "INTERNAL";

/** Every code, in the order of the union: what docs and tests compare against. */
export const ERROR_CODES = [
  "CONFIG_INVALID",
  "USAGE",
  "MODEL_UNAVAILABLE",
  "MODEL_BAD_REPLY",
  "CONTEXT_TOO_LARGE",
  "MAX_ITERATION",
  "TOOL_FAILED",
  "TOOL_REFUSED",
  "TOOL_TIMEOUT",
  "ABORTED",
  "BUDGET",
  "PARSE_FAILED",
  "NOT_FOUND",
  "PAUSED",
  "BLOCKED",
  "REPLAY_DIVERGED",
  "STORE",
  "GAVE_UP",
  "INTERNAL",
] as const satisfies readonly ErrorCode[];

// A code added to the union and not to ERROR_CODES fails to compile here.
const everyCodeListed: Exclude<ErrorCode, (typeof ERROR_CODES)[number]> extends never ? true : never = true;
void everyCodeListed;

/** How a step or a run failed: its code, and a message for people. */
export interface RunError {
  code: ErrorCode;
  message: string;
}

export class RuntimeError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "RuntimeError";
  }
}

/** One problem in a team file, located by line, column and JSON pointer. */
export interface ConfigProblem {
  file: string;
  line: number;
  col: number;
  /** JSON pointer, e.g. `/agents/solver/max_iteration`; `""` for the document. */
  path: string;
  message: string;
}

/** Thrown by `loadTeam` with every problem found, never just the first. */
export class ConfigError extends RuntimeError {
  constructor(readonly problems: ConfigProblem[]) {
    super("CONFIG_INVALID", problems.map(formatProblem).join("\n"));
    this.name = "ConfigError";
  }
}

export function formatProblem(p: ConfigProblem): string {
  return `${p.file}:${p.line}:${p.col} ${p.path || "/"} ${p.message}`;
}

/** An error and what caused it, outermost first (`cause` after `cause`, five deep at most): where a wrapped error's reason is looked for. */
export function causes(err: unknown): Error[] {
  const chain: Error[] = [];
  for (let e = err; e instanceof Error && chain.length < 5; e = e.cause) chain.push(e);
  return chain;
}

/** The code of a thrown value: its own when it is a RuntimeError, INTERNAL (a bug) otherwise. */
export function codeOf(err: unknown): ErrorCode {
  return err instanceof RuntimeError ? err.code : "INTERNAL";
}

/** A thrown value as a RunError, its message prefixed with `context` when given. */
export function runErrorOf(err: unknown, context?: string): RunError {
  const message = describeError(err);
  return { code: codeOf(err), message: context ? `${context}: ${message}` : message };
}

/** `error` with `context` before its message, its code kept (INTERNAL when there is no error: a bug). */
export function prefixed(context: string, error: RunError | undefined): RunError {
  return { code: error?.code ?? "INTERNAL", message: `${context}${error?.message ?? "unknown error"}` };
}

/** The error of a run the signal cancelled. */
export const INTERRUPTED: RunError = Object.freeze({ code: "ABORTED", message: "interrupted" });

/** A RunError as something to throw again, keeping its code. */
export function toRuntimeError(error: RunError, context?: string): RuntimeError {
  return new RuntimeError(error.code, context ? `${context}: ${error.message}` : error.message);
}

/**
 * An assertion of an impossible state: a bug, never bad input. The one
 * `throw new Error` in src/ (test/architecture/errors.test.ts checks it).
 */
export function unreachable(what: string): never {
  throw new Error(`internal error: ${what}`);
}

/** A one-line description of any thrown value, never a stack trace. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message.split("\n")[0] ?? err.name;
  return String(err);
}
