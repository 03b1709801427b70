/**
 * Exit statuses shared by the CLI entry (`main.ts`) and its command modules.
 * Kept apart from `main.ts` so that commands need not import the module that
 * imports them (no cycle between `main.ts` and `commands/*`).
 */

/** Exit codes of PRODUCT.md section 3. */
export const EXIT = { OK: 0, RUN_ERROR: 1, USAGE: 2, PAUSED: 3, INTERRUPTED: 130 } as const;

/** Signature every command module exports: `register<Name>(program, setExit)`. */
export type SetExit = (code: number) => void;
