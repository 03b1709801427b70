/**
 * What `npm run build` writes beside the compiled code so that start-up reads
 * it instead of compiling: validators (src/config/precompiled.ts), the
 * default prompts (src/prompts/precompiled.ts) and one-file bundles of
 * packages (src/lazy.ts). Each file is stamped with a
 * hash of what it was made from; a file made from anything else, or none at
 * all (running from the sources), is not used and the caller compiles
 * instead (docs/design/engine.md#start-up).
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Script } from "node:vm";

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

/**
 * A package loaded on first use (as `lazily` in src/lazy.ts), from the one
 * file the build bundled it into, dist/vendor/<id>.cjs
 * (scripts/bundle-vendor.mjs): one module to load instead of dozens, compiled
 * with the V8 code cache the build wrote beside it; the package itself when
 * running from the sources.
 */
export function lazilyBundled<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= (loadBundle(fileURLToPath(new URL(`./vendor/${id}.cjs`, import.meta.url))) ?? require(id)) as T);
}

/** The V8 code cache of a bundle: `<bundle>.v8cache`, the bundle's stamp, a newline, then V8's data. */
export const codeCacheFile = (bundle: string): string => `${bundle}.v8cache`;

/**
 * A bundle's text as V8 compiles it: the wrapper Node gives a CommonJS
 * module. The build compiles this same text to make the code cache, which
 * V8 accepts only for it.
 */
export function compileBundle(source: string, file: string, cachedData?: Buffer): Script {
  return new Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, { filename: file, ...(cachedData ? { cachedData } : {}) });
}

/** Run a compiled bundle as a CommonJS module; its exports. */
export function runBundle(script: Script, file: string): unknown {
  const module = { exports: {} as unknown };
  const wrapper = script.runInThisContext() as (...args: unknown[]) => void;
  wrapper.call(module.exports, module.exports, createRequire(file), module, file, dirname(file));
  return module.exports;
}

/**
 * Load the bundle at `file`, or undefined when the build wrote none. With
 * its code cache (made from the same text: the stamp says so, as V8 itself
 * checks only the length), V8 skips compiling what the cache holds: the yaml
 * parser's first team file took 25-34 ms cold, 10-13 ms so (docs/performance.md).
 * A cache V8 refuses (another Node version, other flags) only costs that time.
 */
export function loadBundle(file: string): unknown {
  let source: string;
  try {
    source = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let cachedData: Buffer | undefined;
  try {
    const cache = readFileSync(codeCacheFile(file));
    const stamp = buildStamp(source);
    if (cache.length > stamp.length && cache.toString("latin1", 0, stamp.length + 1) === `${stamp}\n`) cachedData = cache.subarray(stamp.length + 1);
  } catch {
    // No cache (an older build): compiled as any module is.
  }
  return runBundle(compileBundle(source, file, cachedData), file);
}
