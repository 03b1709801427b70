/**
 * `--store URL` (or `RUNTIME_STORE_URL`): where runs are kept
 * (docs/scale-out.md). A `postgres://` URL names PostgreSQL; without one,
 * the embedded SQLite files under the trace directory are used.
 */
import { RuntimeError } from "../errors.js";

export const STORE_OPTION_HELP =
  "keep runs in PostgreSQL: postgres://user:password@host:port/db (default $RUNTIME_STORE_URL; else SQLite under the trace directory)";

/** The PostgreSQL URL asked for, if any; a `--store` that is not one is a usage error. */
export function storeUrl(given: string | undefined): string | undefined {
  const url = given ?? (process.env["RUNTIME_STORE_URL"] || undefined);
  if (url === undefined) return undefined;
  if (!/^postgres(ql)?:\/\//i.test(url)) {
    throw new RuntimeError(
      "USAGE",
      `--store must be a postgres:// URL (the embedded store is chosen with --trace-dir), not '${url.replace(/:[^:@/]*@/, ":***@")}'`,
    );
  }
  return url;
}
