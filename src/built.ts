/**
 * What `npm run build` writes beside the compiled code so that start-up reads
 * it instead of compiling: validators (src/config/precompiled.ts) and the
 * default prompts (src/prompts/precompiled.ts). Each file is stamped with a
 * hash of what it was made from; a file made from anything else, or none at
 * all (running from the sources), is not used and the caller compiles
 * instead (docs/design/engine.md#start-up).
 */
import { createHash } from "node:crypto";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);

/** The stamp of a built file: a hash of the texts it is made from. */
export function buildStamp(...texts: string[]): string {
  const hash = createHash("sha256");
  for (const text of texts) hash.update(text).update("\u0000");
  return hash.digest("hex");
}

/**
 * The CommonJS module the build wrote at `url`, or undefined when there is
 * none. A built file that is there but fails to load (a module it needs is
 * missing) is an error, not an absence.
 */
export function requireBuilt(url: URL): unknown {
  const file = fileURLToPath(url);
  try {
    return require(file) as unknown;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "MODULE_NOT_FOUND" && (err as Error).message.includes(file)) return undefined;
    throw err;
  }
}
