/**
 * Exit statuses shared by the CLI entry (`main.ts`) and its command modules.
 * Kept apart from `main.ts` so that commands need not import the module that
 * imports them (no cycle between `main.ts` and `commands/*`).
 */
import type { ErrorCode } from "../errors.js";

/** Exit codes of PRODUCT.md section 3. */
export const EXIT = { OK: 0, RUN_ERROR: 1, USAGE: 2, PAUSED: 3, BLOCKED: 4, INTERRUPTED: 130 } as const;

/** Signature every command module exports: `register<Name>(program, setExit)`. */
export type SetExit = (code: number) => void;

/**
 * The exit status of a failure, from its code alone (docs/cli.md#exit-status):
 * wrong input 2, a pause 3, blocked by a guardrail 4, a cancelled run 130, anything else 1.
 */
export function exitStatusOf(code: ErrorCode): number {
  switch (code) {
    case "CONFIG_INVALID":
    case "USAGE":
      return EXIT.USAGE;
    case "PAUSED":
      return EXIT.PAUSED;
    case "BLOCKED":
      return EXIT.BLOCKED;
    case "ABORTED":
      return EXIT.INTERRUPTED;
    default:
      return EXIT.RUN_ERROR;
  }
}
