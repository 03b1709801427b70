import { RuntimeError, describeError } from "../errors.js";
import type { Emit, EventScope } from "../events/types.js";
import { recursionScopes } from "../events/bus.js";
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
  /** The scope of each recursion, shared with the step (`recursionScopes` of `scope` when not given). */
  scopes?: (trace_id: string | undefined) => EventScope;
  emit: Emit;
  /** Aborting it stops every running tool. */
  signal: AbortSignal;
  /** The run's journal: told of each call before it runs and of its outcome before the step moves on. */
  journal?: ToolJournal;
  /** Budgets: `check` throws when no tool call may start; `count` charges one (src/engine/budget.ts). */
  budget?: { check(): void; count(): void };
  /** Tools this agent may call only with a person's approval (besides tools that require it themselves). */
  approval?: ReadonlySet<string>;
  /** Throws when the run may start no new call (it is pausing for an approval). */
  halt?(): void;
  /** Asks for the decision on a call that needs one; throws when the run pauses for it instead. */
  approve?: Approve;
  /** The step's tool_input and tool_output guardrails (src/guardrails/guard.ts); unset when it has none. */
  guard?: ToolGuard;
  /**
   * Whether the run is stopping (paused, out of budget): a call failing then
   * failed because of that, so its outcome is not journalled and a resume
   * runs it again.
   */
  stopping?(): boolean;
}

/**
 * Checks of a call's arguments before it runs and of its result before the
 * model sees it (docs/guardrails.md): the value to go on with, or the reason
 * the call fails with (a retry); a block throws.
 */
export interface ToolGuard {
  applies(on: "tool_input" | "tool_output", tool: string): boolean;
  check(on: "tool_input" | "tool_output", text: string, tool: string): Promise<{ ok: true; text: string } | { ok: false; reason: string }>;
}

/** A call that needs a person's decision before it runs. */
export interface ApprovalRequest {
  key: string;
  call: ToolCallRequest;
  args: unknown;
  /** A write that started before the run stopped and has no result: it may have run. */
  in_doubt: boolean;
}

export type Approve = (request: ApprovalRequest) => Promise<{ decision: "approve" | "deny"; reason?: string }>;

/** Where a ToolBox commits its calls (the engine's journal, src/engine/journal.ts). */
export interface ToolJournal {
  /**
   * Give a call its key, in the order of the reply's calls, and say what the
   * journal holds for it when the run goes over a stored one (src/engine/replay.ts).
   */
  open(call: ToolCallRequest, args: unknown): OpenedCall;
  started(key: string, call: ToolCallRequest, args: unknown): void;
  finished(key: string, outcome: ToolOutcome): void;
  /** Commit what the run has written so far: called right before a tool's body runs. */
  commit(): void | Promise<void>;
}

/** What the journal holds for a tool call. */
export type RecordedCall =
  /** It finished: its outcome. */
  | { kind: "result"; outcome: ToolOutcome }
  /** It started and its result was never committed: it may have run. */
  | { kind: "started" };

export interface OpenedCall {
  key: string;
  recorded?: RecordedCall;
  /** The recorded call's events are in the store already: do not emit them again. */
  quiet: boolean;
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

  const scopeOf = options.scopes ?? recursionScopes(options.scope);

  return {
    specs,
    has: (name) => allowed.has(name),
    run: async (calls, runOptions) => {
      const scope = scopeOf(runOptions?.trace_id);
      // Every call settles before the reply's outcome is known: one that stopped the run (a budget,
      // a pause) does not leave the others running past the step.
      const settled = await Promise.allSettled(calls.map((call) => runOne(call, allowed, scope, options)));
      const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
      if (failed) throw failed.reason;
      return settled.map((s) => (s as PromiseFulfilledResult<ToolOutcome>).value);
    },
    refuse: (call, error, runOptions) => {
      const scope = scopeOf(runOptions?.trace_id);
      const parsed = parseToolArguments(call.arguments);
      const args: unknown = parsed.ok ? parsed.value : call.arguments;
      const opened = options.journal?.open(call, args);
      if (opened?.recorded?.kind === "result") {
        const outcome = opened.recorded.outcome;
        if (!opened.quiet) {
          options.emit({ type: "tool.started", tool: outcome.tool, call_id: outcome.call_id, arguments: outcome.arguments }, scope);
          options.emit({ type: "tool.finished", ...outcome }, scope);
        }
        return outcome;
      }
      options.emit({ type: "tool.started", tool: call.name, call_id: call.id, arguments: args }, scope);
      if (opened) options.journal?.started(opened.key, call, args);
      return settle(call, args, { ok: false, error }, 0, scope, options, opened?.key);
    },
  };
}

/** The outcome of a call: journalled, then reported by `tool.finished`. */
function settle(
  call: ToolCallRequest,
  args: unknown,
  settled: Settled,
  duration_ms: number,
  scope: EventScope,
  options: ToolBoxOptions,
  key: string | undefined,
  journal = true,
): ToolOutcome {
  const outcome: ToolOutcome = { call_id: call.id, tool: call.name, arguments: args, ok: settled.ok, duration_ms };
  if (settled.ok) outcome.result = settled.result;
  else outcome.error = settled.error;
  if (key !== undefined && journal) options.journal?.finished(key, outcome);
  options.emit({ type: "tool.finished", ...outcome }, scope);
  return outcome;
}

/**
 * A call the journal holds the outcome of: reused, and reported only when the
 * run is replayed offline (its start now, its end after the reply's other
 * calls started, as when it ran). A tool whose state lives in the run is run
 * again on the same arguments: the state is rebuilt, the model sees what it saw.
 */
async function reuse(
  opened: OpenedCall,
  outcome: ToolOutcome,
  tool: Tool | undefined,
  parsed: ReturnType<typeof parseToolArguments>,
  scope: EventScope,
  options: ToolBoxOptions,
): Promise<ToolOutcome> {
  options.budget?.count();
  const emit = opened.quiet ? () => {} : options.emit;
  emit({ type: "tool.started", tool: outcome.tool, call_id: outcome.call_id, arguments: outcome.arguments }, scope);
  // Replayed offline, the guardrails look again at what they looked at (their events are the run's).
  if (!opened.quiet && options.guard) {
    await guarded(options.guard, "tool_input", outcome.tool, outcome.arguments);
    if (outcome.ok) await guarded(options.guard, "tool_output", outcome.tool, outcome.result);
  }
  if (tool?.replay === "rerun" && parsed.ok) await execute(tool, parsed.value, outcome.call_id, scope, Object.assign({}, options, { emit }));
  else await undefined;
  emit({ type: "tool.finished", ...outcome }, scope);
  return outcome;
}

async function runOne(call: ToolCallRequest, allowed: Map<string, Tool>, scope: EventScope, options: ToolBoxOptions): Promise<ToolOutcome> {
  const parsed = parseToolArguments(call.arguments);
  const args: unknown = parsed.ok ? parsed.value : call.arguments;
  const opened = options.journal?.open(call, args);
  const tool = allowed.get(call.name);
  if (opened?.recorded?.kind === "result") return reuse(opened, opened.recorded.outcome, tool, parsed, scope, options);
  let checked = check(call, parsed, tool, allowed);
  // A tool_input guardrail sees the arguments before anyone is asked or anything runs (docs/guardrails.md).
  let refused: Settled | undefined;
  if (checked.ok && options.guard) {
    const verdict = await guarded(options.guard, "tool_input", call.name, checked.args);
    if (!verdict.ok) refused = { ok: false, error: verdict.reason };
    else if (verdict.value !== undefined) checked = { ...checked, args: verdict.value as Record<string, unknown> };
  }
  // Once stopped with no result, a write may have run: never again without a person's say.
  const in_doubt = checked.ok && opened?.recorded?.kind === "started" && checked.tool.effect === "write";
  const asks =
    checked.ok && !refused && opened !== undefined && (in_doubt || checked.tool.approval === "required" || options.approval?.has(call.name) === true);
  // A run pausing starts nothing new, but every call of the reply that needs a decision still asks for it.
  if (!asks) options.halt?.();
  // A call that would start past a budget is not started: the step ends with the budget's error.
  options.budget?.check();
  options.budget?.count();
  const started = performance.now();
  let decided: Settled | undefined;
  if (asks && opened) {
    const { decision, reason } = await approve(options, { key: opened.key, call, args, in_doubt });
    if (decision === "deny") decided = { ok: false, error: `a person denied this call${reason ? `: ${reason}` : ""}` };
  }
  // A call started before the run stopped reported its start then.
  if (!(opened?.quiet && opened.recorded?.kind === "started")) {
    options.emit({ type: "tool.started", tool: call.name, call_id: call.id, arguments: args }, scope);
  }
  if (opened) options.journal?.started(opened.key, call, args);
  let settled = refused ?? decided ?? (checked.ok ? await run(checked.tool, checked.args, call, scope, options) : checked);
  // A tool_output guardrail sees the result before the model does.
  if (settled.ok && !refused && !decided && options.guard) {
    const verdict = await guarded(options.guard, "tool_output", call.name, settled.result);
    if (!verdict.ok) settled = { ok: false, error: verdict.reason };
    else if (verdict.value !== undefined) settled = { ok: true, result: verdict.value };
  }
  const duration_ms = Math.round(performance.now() - started);
  // An error that only says the run is stopping is not the call's outcome: a resume runs the call again.
  return settle(call, args, settled, duration_ms, scope, options, opened?.key, settled.ok || !(options.signal.aborted || options.stopping?.()));
}

/**
 * A value through a guard: its text (a string as it is, anything else as
 * JSON) checked; `value` is the masked value when a guardrail redacted it
 * (undefined: unchanged). Masked JSON that no longer parses fails the call.
 */
async function guarded(
  guard: ToolGuard,
  on: "tool_input" | "tool_output",
  tool: string,
  value: unknown,
): Promise<{ ok: true; value?: unknown } | { ok: false; reason: string }> {
  if (!guard.applies(on, tool)) return { ok: true };
  const text = typeof value === "string" ? value : JSON.stringify(value ?? null);
  const verdict = await guard.check(on, text, tool);
  if (!verdict.ok) return verdict;
  if (verdict.text === text) return { ok: true };
  if (typeof value === "string") return { ok: true, value: verdict.text };
  try {
    return { ok: true, value: JSON.parse(verdict.text) as unknown };
  } catch {
    return { ok: false, reason: `a guardrail masked part of the ${on === "tool_input" ? "arguments" : "result"}, which is no longer JSON` };
  }
}

function approve(options: ToolBoxOptions, request: ApprovalRequest): ReturnType<Approve> {
  if (!options.approve) return Promise.reject(new RuntimeError("TOOL_REFUSED", `tool "${request.call.name}" needs approval and nobody can give it`));
  return options.approve(request);
}

type Settled = { ok: true; result: unknown } | { ok: false; error: string };

/** The tool and its arguments, or why the call cannot run: outside the allow-list, bad arguments. */
function check(
  call: ToolCallRequest,
  parsed: ReturnType<typeof parseToolArguments>,
  tool: Tool | undefined,
  allowed: Map<string, Tool>,
): { ok: true; tool: Tool; args: Record<string, unknown> } | { ok: false; error: string } {
  if (!tool) {
    const names = [...allowed.keys()];
    const offer = names.length > 0 ? `you may use: ${names.join(", ")}` : "no tools are available to you";
    return { ok: false, error: `tool "${call.name}" is not available to this agent; ${offer}` };
  }
  if (!parsed.ok) return { ok: false, error: parsed.error };
  const valid = argsValidator.check(tool.name, tool.parameters, parsed.value);
  return valid.ok ? { ok: true, tool, args: parsed.value } : valid;
}

async function run(tool: Tool, args: Record<string, unknown>, call: ToolCallRequest, scope: EventScope, options: ToolBoxOptions): Promise<Settled> {
  if (options.signal.aborted) return { ok: false, error: "aborted before the tool ran" };
  // Write-ahead: the reply that asked for this call, and its start, are durable before the body acts
  // on the world. A read or idempotent tool changes nothing that running it again would not: its
  // start is committed with what follows (a resume runs it again), one commit fewer per call.
  const committed = tool.effect === "write" ? options.journal?.commit() : undefined;
  if (committed) await committed;
  // The commit may have found the run stopped meanwhile (a worker that lost its lease: docs/scale-out.md).
  if (options.signal.aborted) return { ok: false, error: "aborted before the tool ran" };
  const executed = await execute(tool, args, call.id, scope, options);
  return executed.ok ? capOutput(executed.result, tool.max_output_bytes) : executed;
}

/** Runs a tool under its timeout and the step's signal; a throw becomes an error result. */
function execute(tool: Tool, args: Record<string, unknown>, call_id: string, scope: EventScope, options: ToolBoxOptions): Promise<Settled> {
  // The call's own signal, made when the tool first reads it: most builtins never do (an
  // AbortController per call was ~1 % of a react loop's CPU at 50 runs at once, docs/performance.md).
  let controller: AbortController | undefined;
  let abortedWith: Error | undefined;
  return new Promise<Settled>((resolve) => {
    let done = false;
    const finish = (settled: Settled, abortReason?: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      if (abortReason !== undefined) {
        abortedWith = new RuntimeError(abortReason === "aborted" ? "ABORTED" : "TOOL_TIMEOUT", abortReason);
        controller?.abort(abortedWith);
      }
      resolve(settled);
    };
    const onAbort = (): void => finish({ ok: false, error: "aborted" }, "aborted");
    const timer = setTimeout(() => {
      const message = `timed out after ${tool.timeout_ms} ms`;
      finish({ ok: false, error: message }, message);
    }, tool.timeout_ms);
    options.signal.addEventListener("abort", onAbort, { once: true });

    const ctx = {
      get signal() {
        if (controller === undefined) {
          controller = new AbortController();
          // Read after the call ended: aborted already, with the reason it ended for.
          if (abortedWith !== undefined) controller.abort(abortedWith);
        }
        return controller.signal;
      },
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
  const head = Buffer.from(source)
    .subarray(0, maxBytes)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  return {
    ok: true,
    result: `${head}\n[output truncated: ${bytes} bytes exceeded the cap of ${maxBytes} bytes]`,
  };
}
