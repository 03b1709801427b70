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

/** Path → the module's checked exports. Only loads that succeeded are kept, so a fixed file is read again. */
const loaded = new Map<string, Promise<Exports>>();

/**
 * The checked exports of the module at `path` (absolute). Rejects with a
 * RuntimeError (CONFIG_INVALID) whose one-line message names the file and
 * what is wrong with it.
 */
export function loadToolModule(path: string): Promise<Exports> {
  let entry = loaded.get(path);
  if (!entry) {
    entry = importChecked(path);
    loaded.set(path, entry);
    entry.catch(() => loaded.delete(path));
  }
  return entry;
}

async function importChecked(path: string): Promise<Exports> {
  let exports: Record<string, unknown>;
  try {
    exports = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
  } catch (err) {
    // A syntax error says so: its message alone ("Unexpected identifier") would not.
    const reason = err instanceof SyntaxError ? `SyntaxError: ${describeError(err)}` : describeError(err);
    throw new RuntimeError("CONFIG_INVALID", `tool module ${shown(path)} cannot be loaded: ${reason}`, { cause: err });
  }
  const problem = shapeProblem(exports);
  if (problem !== undefined) throw new RuntimeError("CONFIG_INVALID", `tool module ${shown(path)}: ${problem}`);
  return exports as unknown as Exports;
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
