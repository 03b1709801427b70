/**
 * What `npm run build` writes beside the compiled code so that start-up reads
 * it instead of compiling: validators (src/config/precompiled.ts), the
 * default prompts (src/prompts/precompiled.ts), and one-file bundles of
 * packages with their V8 code caches (`lazilyBundled`, below). Each file is
 * stamped with a hash of what it was made from; a file made from anything
 * else, or none at all (running from the sources), is not used and the
 * caller compiles instead (docs/design/engine.md#start-up).
 */
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
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

/** The V8 code cache of a bundle: `<bundle>.v8cache`, its header line (`cacheHeader`), then V8's data. */
export const codeCacheFile = (bundle: string): string => `${bundle}.v8cache`;

/**
 * The first line of a bundle's code cache: the stamp of the bundle's text
 * and path, then a hash of V8's data. V8 itself checks only the text's
 * length (from a cache of another text of that length it runs the old code),
 * keeps the path the cache was made at in stack traces (a moved copy would
 * name the build's), and does not check its data (a damaged cache of the
 * right length crashed the process).
 */
function cacheHeader(source: string, file: string, data: Buffer): string {
  return `${buildStamp(source, file)} ${createHash("sha256").update(data).digest("hex")}\n`;
}

/** Write the code cache of a bundle the build compiled and ran (scripts/bundle-vendor.mjs). */
export function writeCodeCache(file: string, source: string, script: Script): void {
  const data = script.createCachedData();
  writeFileSync(codeCacheFile(file), Buffer.concat([Buffer.from(cacheHeader(source, file, data), "latin1"), data]));
}

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

/** Bundles loaded in this process, by file: each is run once, as `require` would. */
const bundles = new Map<string, unknown>();

/**
 * Load the bundle at `file` (once per process), or undefined when the build
 * wrote none. With its code cache, when the header says it was made from
 * this text at this path and its data is whole, V8 skips compiling what the
 * cache holds: a first team file parses in 11-15 ms instead of 20-28
 * (docs/performance.md). A cache V8 refuses (another Node version, other
 * flags) or none at all only costs that time.
 */
export function loadBundle(file: string): unknown {
  if (bundles.has(file)) return bundles.get(file);
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
    const end = cache.indexOf(0x0a);
    const data = cache.subarray(end + 1);
    if (end > 0 && cache.toString("latin1", 0, end + 1) === cacheHeader(source, file, data)) cachedData = data;
  } catch {
    // No cache (an older build): compiled as any module is.
  }
  const exports = runBundle(compileBundle(source, file, cachedData), file);
  bundles.set(file, exports);
  return exports;
}
