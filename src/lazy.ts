/**
 * A CommonJS package loaded on its first use, synchronously: importing the
 * library or starting the CLI pays nothing for the packages a command never
 * reaches (ajv, yaml, handlebars: docs/design/engine.md#start-up).
 * Only CommonJS packages, so the instance is the one `import` would give.
 */
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

/** `() => require(id)`, loading the module the first time it is called. */
export function lazily<T>(id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(id) as T);
}
