/**
 * A CommonJS package loaded on its first use, synchronously: importing the
 * library or starting the CLI pays nothing for the packages a command never
 * reaches (ajv, yaml, handlebars: docs/design/engine.md#start-up).
 * Only CommonJS packages, so the instance is the one `import` would give.
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);

/** `() => require(id)`, loading the module the first time it is called. */
export function lazily<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(id) as T);
}

/**
 * `lazily(id)` for a package the build also wrote as one file,
 * dist/vendor/<id>.cjs (scripts/bundle-vendor.mjs): that file when it is
 * there, one module to load instead of dozens; the package itself when
 * running from the sources.
 */
export function lazilyBundled<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= (requireIfPresent(fileURLToPath(new URL(`./vendor/${id}.cjs`, import.meta.url))) ?? require(id)) as T);
}

function requireIfPresent(file: string): unknown {
  try {
    return require(file) as unknown;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "MODULE_NOT_FOUND" && (err as Error).message.includes(file)) return undefined;
    throw err;
  }
}
