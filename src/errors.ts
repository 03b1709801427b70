/**
 * Errors with a closed code union. "Your YAML or input is wrong" (ConfigError,
 * exit 2) is kept apart from "the run failed" (RuntimeError, exit 1) and from a bug.
 */
export type ErrorCode =
  | "CONFIG_INVALID"
  | "USAGE"
  | "MODEL_UNAVAILABLE"
  | "MODEL_BAD_REPLY"
  | "MAX_ITERATION"
  | "TOOL_FAILED"
  | "TOOL_REFUSED"
  | "TOOL_TIMEOUT"
  | "ABORTED"
  | "BUDGET"
  | "PARSE_FAILED"
  | "NOT_FOUND"
  | "PAUSED"
  | "REPLAY_DIVERGED"
  /** A database of the store (docs/scale-out.md) failed or could not be reached. */
  | "STORE";

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

/** A one-line description of any thrown value, never a stack trace. */
export function describeError(err: unknown): string {
  if (err instanceof Error) return err.message.split("\n")[0] ?? err.name;
  return String(err);
}
