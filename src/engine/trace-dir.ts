import { resolve } from "node:path";

/** The trace directory: explicit option, else RUNTIME_TRACE_DIR, else `.runtime` in the working directory. */
export function resolveTraceDir(explicit?: string): string {
  return resolve(explicit ?? process.env.RUNTIME_TRACE_DIR ?? ".runtime");
}
