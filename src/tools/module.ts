/**
 * `module:` tools (docs/code-tools.md): an ES module of the team's own,
 * imported once per process, when a run first needs it, and checked before
 * use: it exports `description`, `parameters`, `effect` and `execute`.
 */
import { relative } from "node:path";
import { pathToFileURL } from "node:url";
import type { ModuleToolConfig } from "../config/types.js";
import { describeError, RuntimeError } from "../errors.js";
import { codeTool, shapeProblem, type ToolDefinition } from "./code-tool.js";
import type { Tool } from "./types.js";

type Exports = Pick<ToolDefinition, "description" | "parameters" | "effect" | "execute">;

/** Key → the module's checked exports. Only loads that succeeded are kept, so a fixed file is read again. */
const loaded = new Map<string, Promise<unknown>>();

/**
 * The checked exports of the module at `path` (absolute). Rejects with a
 * RuntimeError (CONFIG_INVALID) whose one-line message names the file and
 * what is wrong with it.
 */
export function loadToolModule(path: string): Promise<Exports> {
  return loadTeamModule(path, "tool module", (exports) => shapeProblem(exports) ?? (exports as unknown as Exports));
}

/**
 * A module of the team's own (a `module:` tool, a flow's `parser:`), imported
 * once per process; `check` returns what the caller uses of its exports, or
 * a string saying what is wrong with them. Rejects with a RuntimeError
 * (CONFIG_INVALID) in one line naming the file: "<what> <file>: <problem>".
 */
export function loadTeamModule<T>(path: string, what: string, check: (exports: Record<string, unknown>) => T | string): Promise<T> {
  const key = `${what}\0${path}`;
  let entry = loaded.get(key) as Promise<T> | undefined;
  if (!entry) {
    entry = importChecked(path, what, check);
    loaded.set(key, entry);
    entry.catch(() => loaded.delete(key));
  }
  return entry;
}

async function importChecked<T>(path: string, what: string, check: (exports: Record<string, unknown>) => T | string): Promise<T> {
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (err) {
    // A syntax error says so: its message alone ("Unexpected identifier") would not.
    const reason = err instanceof SyntaxError ? `SyntaxError: ${describeError(err)}` : describeError(err);
    throw new RuntimeError("CONFIG_INVALID", `${what} ${shown(path)} cannot be loaded: ${reason}`, { cause: err });
  }
  const checked = check(exports);
  if (typeof checked === "string") throw new RuntimeError("CONFIG_INVALID", `${what} ${shown(path)}: ${checked}`);
  return checked;
}

/**
 * The runnable tool of a `module:` entry whose module is loaded
 * (`loadToolModule`); its errors show their frames inside `root`, the team's
 * folder, relative to it.
 */
export function moduleTool(config: ModuleToolConfig, exports: Exports, root?: string): Tool {
  const tool = codeTool(config.name, exports, {
    timeout_ms: config.timeout_ms,
    max_output_bytes: config.max_output_bytes,
    description: config.description,
    ...(root ? { root } : {}),
  });
  // The team file may say more than the module: its effect wins, and calls may need approval.
  return { ...tool, ...(config.effect ? { effect: config.effect } : {}), ...(config.approval ? { approval: config.approval } : {}) };
}

/** The path as the user wrote it, roughly: relative to the working directory when that is shorter. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel.length < path.length && !rel.startsWith("..") ? rel : path;
}
