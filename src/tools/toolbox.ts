import { describeError } from "../errors.js";
import type { Emit, EventScope } from "../events/types.js";
import type { ToolCallRequest, ToolSpec } from "../models/types.js";
import type { Tool, ToolBox, ToolOutcome } from "./types.js";
import { argsValidator, parseToolArguments } from "./validate-args.js";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../parse/json.js";

/** What a ToolBox is built from. */
export interface ToolBoxOptions {
  /** Every tool the step could know of; only those named in `allow` are offered. */
  tools: Tool[];
  /** The agent's allow-list, in the order the model should see the tools. */
  allow: string[];
  scope: EventScope;
  emit: Emit;
  /** Aborting it stops every running tool. */
  signal: AbortSignal;
  /** The run's journal: told of each call before it runs and of its outcome before the step moves on. */
  journal?: ToolJournal;
  /** Budgets: `check` throws when no tool call may start; `count` charges one (src/engine/budget.ts). */
  budget?: { check(): void; count(): void };
}

/** Where a ToolBox commits its calls (the engine's journal, src/engine/journal.ts). */
export interface ToolJournal {
  started(call: ToolCallRequest, args: unknown): void;
  finished(call: ToolCallRequest, outcome: ToolOutcome): void;
  /** Commit what the run has written so far: called right before a tool's body runs. */
  commit(): void;
}

/**
 * The tools one agent step may use. Calls outside the allow-list are refused
 * back to the model, arguments are parsed and validated before anything runs,
 * and every call of a reply runs concurrently under its own timeout and cap.
 */
export function createToolBox(options: ToolBoxOptions): ToolBox {
  const known = new Map(options.tools.map((t) => [t.name, t]));
  const allowed = new Map<string, Tool>();
  for (const name of options.allow) {
    const tool = known.get(name);
    if (tool && !allowed.has(name)) allowed.set(name, tool);
  }
  const specs: ToolSpec[] = [...allowed.values()].map(({ name, description, parameters }) => ({
    name,
    description,
    parameters,
  }));

  return {
    specs,
    has: (name) => allowed.has(name),
    run: (calls, runOptions) => {
      const scope = scopeOf(options, runOptions?.trace_id);
      return Promise.all(calls.map((call) => runOne(call, allowed, scope, options)));
    },
    refuse: (call, error, runOptions) => {
      const scope = scopeOf(options, runOptions?.trace_id);
      const parsed = parseToolArguments(call.arguments);
      const args: unknown = parsed.ok ? parsed.value : call.arguments;
      options.emit({ type: "tool.started", tool: call.name, call_id: call.id, arguments: args }, scope);
      options.journal?.started(call, args);
      return settle(call, args, { ok: false, error }, 0, scope, options);
    },
  };
}

function scopeOf(options: ToolBoxOptions, trace_id: string | undefined): EventScope {
  return trace_id === undefined ? options.scope : { ...options.scope, trace_id };
}

/** The outcome of a call: journalled, then reported by `tool.finished`. */
function settle(
  call: ToolCallRequest,
  args: unknown,
  settled: Settled,
  duration_ms: number,
  scope: EventScope,
  options: ToolBoxOptions,
): ToolOutcome {
  const outcome: ToolOutcome = { call_id: call.id, tool: call.name, arguments: args, ok: settled.ok, duration_ms };
  if (settled.ok) outcome.result = settled.result;
  else outcome.error = settled.error;
  options.journal?.finished(call, outcome);
  options.emit({ type: "tool.finished", ...outcome }, scope);
  return outcome;
}

async function runOne(
  call: ToolCallRequest,
  allowed: Map<string, Tool>,
  scope: EventScope,
  options: ToolBoxOptions,
): Promise<ToolOutcome> {
  // A call that would start past a budget is not started: the step ends with the budget's error.
  options.budget?.check();
  options.budget?.count();
  const started = performance.now();
  const parsed = parseToolArguments(call.arguments);
  const args: unknown = parsed.ok ? parsed.value : call.arguments;
  options.emit({ type: "tool.started", tool: call.name, call_id: call.id, arguments: args }, scope);
  options.journal?.started(call, args);
  const settled = await attempt(call, parsed, allowed, scope, options);
  return settle(call, args, settled, Math.round(performance.now() - started), scope, options);
}

type Settled = { ok: true; result: unknown } | { ok: false; error: string };

async function attempt(
  call: ToolCallRequest,
  parsed: ReturnType<typeof parseToolArguments>,
  allowed: Map<string, Tool>,
  scope: EventScope,
  options: ToolBoxOptions,
): Promise<Settled> {
  const tool = allowed.get(call.name);
  if (!tool) {
    const names = [...allowed.keys()];
    const offer = names.length > 0 ? `you may use: ${names.join(", ")}` : "no tools are available to you";
    return { ok: false, error: `tool "${call.name}" is not available to this agent; ${offer}` };
  }
  if (!parsed.ok) return { ok: false, error: parsed.error };
  const check = argsValidator.check(tool.name, tool.parameters, parsed.value);
  if (!check.ok) return check;
  if (options.signal.aborted) return { ok: false, error: "aborted before the tool ran" };
  // Write-ahead: the reply that asked for this call, and its start, are durable before the body acts.
  options.journal?.commit();
  const executed = await execute(tool, parsed.value, call.id, scope, options);
  return executed.ok ? capOutput(executed.result, tool.max_output_bytes) : executed;
}

/** Runs a tool under its timeout and the step's signal; a throw becomes an error result. */
function execute(
  tool: Tool,
  args: Record<string, unknown>,
  call_id: string,
  scope: EventScope,
  options: ToolBoxOptions,
): Promise<Settled> {
  const controller = new AbortController();
  return new Promise<Settled>((resolve) => {
    let done = false;
    const finish = (settled: Settled, abortReason?: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      if (abortReason !== undefined) controller.abort(new Error(abortReason));
      resolve(settled);
    };
    const onAbort = (): void => finish({ ok: false, error: "aborted" }, "aborted");
    const timer = setTimeout(() => {
      const message = `timed out after ${tool.timeout_ms} ms`;
      finish({ ok: false, error: message }, message);
    }, tool.timeout_ms);
    options.signal.addEventListener("abort", onAbort, { once: true });

    const ctx = {
      signal: controller.signal,
      scope,
      call_id,
      emit: (body: Parameters<Emit>[0], s?: EventScope) => options.emit(body, s ?? scope),
    };
    Promise.resolve()
      .then(() => tool.execute(args, ctx))
      .then(
        (result) => finish({ ok: true, result }),
        (err: unknown) => finish({ ok: false, error: describeError(err) || "the tool failed" }),
      );
  });
}

/** Serialise the result and cut it at `maxBytes`, saying so in the result itself. */
export function capOutput(result: unknown, maxBytes: number): Settled {
  if (nestsDeeperThan(result, MAX_JSON_DEPTH)) return { ok: false, error: `the tool's result nests deeper than ${MAX_JSON_DEPTH} levels` };
  let text: string | undefined;
  try {
    text = JSON.stringify(result);
  } catch (err) {
    return { ok: false, error: `the tool returned a value that is not JSON-serialisable: ${describeError(err)}` };
  }
  if (text === undefined) return { ok: true, result: null };
  const bytes = Buffer.byteLength(text);
  if (bytes <= maxBytes) return { ok: true, result };
  const source = typeof result === "string" ? result : text;
  // Cutting inside a multi-byte character leaves a replacement character; drop it.
  const head = Buffer.from(source).subarray(0, maxBytes).toString("utf8").replace(/\uFFFD$/, "");
  return {
    ok: true,
    result: `${head}\n[output truncated: ${bytes} bytes exceeded the cap of ${maxBytes} bytes]`,
  };
}
