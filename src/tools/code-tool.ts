/**
 * Tools written in code (docs/code-tools.md): `defineTool()` for applications
 * that embed the runtime, and the shape check a team's `module:` tool passes
 * too. Either becomes a `Tool` run by the ToolBox like any other: arguments
 * validated against `parameters`, a timeout, an output cap, events.
 */
import { isAbsolute, relative, sep } from "node:path";
import { codeToolLimits } from "../config/defaults.js";
import type { JsonSchema } from "../config/types.js";
import { RuntimeError } from "../errors.js";
import type { Tool, ToolEffect } from "./types.js";
import { argsValidator } from "./validate-args.js";

/** What `execute` gets besides its arguments. */
export interface CodeToolContext {
  /** Fires when the call times out or the run is cancelled: stop then. */
  signal: AbortSignal;
  /** The id of this tool call. */
  call_id: string;
  /** The agent that called the tool. */
  agent_id: string;
}

/** A tool's definition in code. */
export interface ToolDefinition<Args extends Record<string, unknown> = Record<string, unknown>> {
  /** The name agents list in `tools`: letters, digits, `_` and `-`, at most 64 characters. */
  name: string;
  /** What the tool does, as the model sees it. */
  description: string;
  /** JSON Schema of the arguments (`type: object`); arguments are checked against it before `execute` runs. */
  parameters: JsonSchema;
  /** What calling it does to the world (docs/durable-runs.md). @default "write" */
  effect?: ToolEffect;
  /** `required`: every call waits for a person's decision (docs/durable-runs.md#approvals). */
  approval?: "required";
  /** @default 30000 */
  timeout_ms?: number;
  /** @default 65536 */
  max_output_bytes?: number;
  /** Runs one call; returns any JSON-serialisable value or throws (the error goes back to the model). */
  execute(args: Args, ctx: CodeToolContext): unknown;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,63}$/;
const EFFECTS: readonly ToolEffect[] = ["read", "idempotent", "write"];

/**
 * A tool for `runTeam(team, { tools })`. Throws a RuntimeError (CONFIG_INVALID)
 * with one line saying what is wrong when the definition is not one.
 */
export function defineTool<Args extends Record<string, unknown> = Record<string, unknown>>(definition: ToolDefinition<Args>): Tool {
  const shown = typeof definition?.name === "string" ? `tool "${definition.name}"` : "defineTool";
  const fail = (problem: string): never => {
    throw new RuntimeError("CONFIG_INVALID", `${shown}: ${problem}`);
  };
  if (typeof definition !== "object" || definition === null) return fail("expected an object with name, description, parameters and execute");
  if (typeof definition.name !== "string" || !NAME.test(definition.name)) {
    fail("name must use letters, digits, '_' and '-', starting with a letter or '_', at most 64 characters");
  }
  for (const key of ["timeout_ms", "max_output_bytes"] as const) {
    const value = definition[key];
    if (value !== undefined && !(Number.isInteger(value) && value > 0)) fail(`${key} must be a positive integer`);
  }
  const problem = shapeProblem(definition as unknown as Record<string, unknown>);
  if (problem !== undefined) fail(problem);
  if (definition.approval !== undefined && definition.approval !== "required") fail(`approval must be "required" or left out`);
  const tool = codeTool(definition.name, definition as unknown as ToolDefinition, { ...codeToolLimits(), ...defined(definition) });
  return definition.approval ? { ...tool, approval: definition.approval } : tool;
}

/**
 * What is wrong with the exports of a code tool (`description`, `parameters`,
 * `effect`, `execute`), or undefined when nothing is.
 */
export function shapeProblem(exports: Record<string, unknown>): string | undefined {
  if (typeof exports.execute !== "function") return `execute must be a function (got ${kind(exports.execute)})`;
  if (typeof exports.description !== "string") return `description must be a string (got ${kind(exports.description)})`;
  const parameters = exports.parameters;
  if (typeof parameters !== "object" || parameters === null || Array.isArray(parameters)) {
    return `parameters must be a JSON Schema object (got ${kind(parameters)})`;
  }
  if ((parameters as JsonSchema).type !== "object") return `parameters must have type: "object" (tool arguments are a JSON object)`;
  const invalid = argsValidator.schemaProblem(parameters as JsonSchema);
  if (invalid !== undefined) return `parameters is not a valid JSON Schema: ${invalid}`;
  if (exports.effect !== undefined && !EFFECTS.includes(exports.effect as ToolEffect)) {
    return `effect must be one of ${EFFECTS.join(", ")} (got ${JSON.stringify(exports.effect) ?? kind(exports.effect)})`;
  }
  return undefined;
}

/** The runnable tool of checked exports, under `name` with the given limits. */
export function codeTool(
  name: string,
  exports: Pick<ToolDefinition, "description" | "parameters" | "effect" | "execute">,
  limits: { timeout_ms: number; max_output_bytes: number; description?: string; root?: string },
): Tool {
  const run = exports.execute;
  const root = limits.root;
  return {
    name,
    description: limits.description || exports.description,
    parameters: exports.parameters,
    effect: exports.effect ?? "write",
    timeout_ms: limits.timeout_ms,
    max_output_bytes: limits.max_output_bytes,
    // `this` stays the exports object, for a module that exports a class-like object.
    execute: async (args, ctx) => {
      try {
        return await run.call(exports, args, { signal: ctx.signal, call_id: ctx.call_id, agent_id: ctx.scope.agent_id });
      } catch (err) {
        // The runtime's own errors (an abort, a refusal) keep their code and words.
        if (err instanceof RuntimeError) throw err;
        throw new RuntimeError("TOOL_FAILED", thrownText(err, root), { cause: err });
      }
    },
  };
}

/** How many stack frames a tool's error shows the model. */
const MAX_FRAMES = 3;

/**
 * What a code tool threw, in one line for the model (docs/code-tools.md#errors):
 * its type unless a plain Error ("TypeError: x is not a function"), and with
 * `root` (a module tool's team folder) the top frames that lie inside it,
 * relative to it: "[at add (lib/sum.mjs:3:9) < execute (add.mjs:12:5)]".
 * Frames elsewhere (Node's, the runtime's) are left out, so no absolute
 * path reaches the model.
 */
export function thrownText(err: unknown, root?: string): string {
  if (!(err instanceof Error)) return String(err);
  const message = err.message.split("\n")[0] || "the tool failed";
  const typed = err.name && err.name !== "Error" ? `${err.name}: ${message}` : message;
  const frames = root ? framesIn(err.stack ?? "", root) : [];
  return frames.length > 0 ? `${typed} [at ${frames.join(" < ")}]` : typed;
}

function framesIn(stack: string, root: string): string[] {
  const out: string[] = [];
  for (const line of stack.split("\n")) {
    const m = /^\s*at (?:(.+?) \()?(?:file:\/\/)?(\/[^():]+):(\d+):(\d+)\)?$/.exec(line);
    if (!m) continue;
    const path = relative(root, decodeURIComponent(m[2] ?? ""));
    if (path.startsWith("..") || isAbsolute(path) || path.split(sep).includes("node_modules")) continue;
    out.push(`${m[1] ? `${m[1].replace(/^(?:async )?(?:Module\.)?/, "")} ` : ""}(${path}:${m[3]}:${m[4]})`);
    if (out.length >= MAX_FRAMES) break;
  }
  return out;
}

function defined(definition: ToolDefinition): { timeout_ms?: number; max_output_bytes?: number } {
  return {
    ...(definition.timeout_ms !== undefined ? { timeout_ms: definition.timeout_ms } : {}),
    ...(definition.max_output_bytes !== undefined ? { max_output_bytes: definition.max_output_bytes } : {}),
  };
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (value === undefined) return "nothing";
  return `a ${typeof value}`;
}
