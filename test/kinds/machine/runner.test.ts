/**
 * The runner (src/kinds/machine/) against xstate's own actor, its reference:
 * each machine runs under `createActor(machine.provide(implementations))`,
 * read through the root's `@xstate.microstep` inspection events, and under
 * `interpret(compile(machine), implementations)`, with the same scripted
 * implementations, and the two traces must be equal: each microstep's state
 * and context, each action's call, each actor's start (with its input) and
 * abort, in order, and the output or the error (docs/design/kinds.md).
 * Every kind's machine is driven through all of its states by seeded
 * scripts; synthetic machines cover what the runner claims beyond them.
 */
import { describe, expect, it, vi } from "vitest";
import { type AnyMachineSnapshot, type AnyStateMachine, createActor, createMachine, type InspectionEvent, setup, type StateNode, toPromise } from "xstate";
import { type RunError, RuntimeError } from "../../../src/errors.js";
import { compile } from "../../../src/kinds/machine/compile.js";
import { type Implementations, interpret } from "../../../src/kinds/machine/interpret.js";
import { assign, fromPromise } from "../../../src/kinds/machine/kit.js";
import { type PlanAndSolveContext, planAndSolveMachine, type Step, type Verdict } from "../../../src/kinds/plan-and-solve/machine.js";
import { type Outcome as FlowOutcome, planAndSolveFlowMachine } from "../../../src/kinds/plan-and-solve-flow/machine.js";
import { type Outcome as SolverPhase, planSolverMachine, type SolverOutcome } from "../../../src/kinds/plan-solver/machine.js";
import { openRecursion, reactMachine } from "../../../src/kinds/react/machine.js";
import type { ReactAction } from "../../../src/kinds/react/protocol.js";
import { type Round, sopMachine } from "../../../src/kinds/sop/machine.js";
import type { ChatResponse } from "../../../src/models/types.js";
import type { PlanInstance, TaskInfo } from "../../../src/plan/types.js";
import type { ToolOutcome } from "../../../src/tools/types.js";

/** One line of a run's trace: a microstep, an action's call, an actor started or aborted, how the run ended. */
type Entry = unknown[];
type Trace = Entry[];
/** A run's implementations, writing what they do to the trace; made afresh for each run. */
type Make = (trace: Trace) => Implementations;
type Event = { type: string };

/** A value as JSON sees it: functions and undefined left out. */
const json = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));
const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** A state value as a dotted path; no parallel regions, so one key per level. */
function pathOf(value: unknown): string {
  if (typeof value === "string") return value;
  const [key, inner] = Object.entries(value as Record<string, unknown>)[0]!;
  return `${key}.${pathOf(inner)}`;
}

/** Let every timer and promise due settle: late actor results arrive, or do not. */
async function quiesce(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setTimeout(resolve, 0));
}

/** The trace with how the run ended: its output, its error, or `stalled` when it rests with nothing left to wait for. */
async function ending(done: Promise<unknown>, trace: Trace): Promise<Trace> {
  let ended = false;
  void done
    .then(
      (output) => trace.push(["output", json(output)]),
      (error: unknown) => trace.push(["error", message(error)]),
    )
    .finally(() => {
      ended = true;
    });
  await quiesce();
  if (!ended) trace.push(["stalled"]);
  return trace;
}

/** The run under xstate's own actor, the reference. */
function underXstate(machine: AnyStateMachine, make: Make, input: unknown, start?: Event): Promise<Trace> {
  const trace: Trace = [];
  const inspect = (ev: InspectionEvent) => {
    if (ev.type !== "@xstate.microstep" || ev.actorRef.sessionId !== ev.rootId) return;
    const snapshot = ev.snapshot as AnyMachineSnapshot;
    trace.push(["step", pathOf(snapshot.value), json(snapshot.context)]);
  };
  const actor = createActor(machine.provide(make(trace) as never), { input, inspect });
  const done = toPromise(actor);
  actor.start();
  if (start !== undefined && actor.getSnapshot().status === "active") actor.send(start);
  return ending(done, trace);
}

/** The run under the project's runner. */
function underRunner(machine: AnyStateMachine, make: Make, input: unknown, start?: Event): Promise<Trace> {
  const trace: Trace = [];
  const observer = {
    microstep: (value: string, context: unknown) => trace.push(["step", value, json(context)]),
    settle: () => {},
  };
  const done = interpret(compile(machine), make(trace), input, { ...(start !== undefined ? { start } : {}), observer });
  return ending(done, trace);
}

/**
 * Both runs' traces, checked equal; returns the reference. `orphans`: the
 * actors still at work when the run failed, which xstate's actor leaves
 * running (its Actor._stopProcedure says it should stop them) and the runner
 * aborts as it fails: the one difference, on purpose.
 */
async function compare(machine: AnyStateMachine, make: Make, input: unknown, start?: Event, orphans: string[] = []): Promise<Trace> {
  const reference = await underXstate(machine, make, input, start);
  const ours = await underRunner(machine, make, input, start);
  const aborted = orphans.map((name) => ["abort", name]);
  expect(ours).toEqual(orphans.length === 0 ? reference : [...reference.slice(0, -1), ...aborted, reference.at(-1)]);
  return reference;
}

/** mulberry32: a small seeded generator, so each case replays exactly. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    chance: (p: number): boolean => next() < p,
    int: (n: number): number => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]!,
  };
}
type Random = ReturnType<typeof random>;

/** An action that writes its call to the trace: its name, the event, its params, the context it saw. */
const recorded =
  (trace: Trace, name: string) =>
  ({ context, event }: { context: unknown; event: Event }, params: unknown) =>
    trace.push(["call", name, event.type, json(params), json(context)]);

/** A promise actor that writes its start (and abort) to the trace and ends with `work`'s value or error. */
function actor<I, O>(trace: Trace, name: string, work: (input: I) => O | Promise<O>) {
  return fromPromise<O, I>(async ({ input, signal }) => {
    trace.push(["start", name, json(input)]);
    signal.addEventListener("abort", () => trace.push(["abort", name]));
    return work(input);
  });
}

/** How a run ended: `answer`, an error's code, `throw` or `stalled`. */
function ended(trace: Trace): string {
  const [kind, value] = trace.at(-1)!;
  if (kind !== "output") return kind === "error" ? "throw" : "stalled";
  const out = value as { result_type: string; error?: { code: string } };
  return out.error?.code ?? out.result_type;
}

/** Every state node of a machine, dotted. */
function stateNodes(machine: AnyStateMachine): Set<string> {
  const all = new Set<string>();
  const visit = (node: StateNode) => {
    if (node.path.length > 0) all.add(node.path.join("."));
    for (const child of Object.values(node.states)) visit(child as StateNode);
  };
  visit(machine.root);
  return all;
}
/** The states the traces went through: the initial ones, each microstep's, and their ancestors. */
function visitedBy(machine: AnyStateMachine, traces: Trace[]): Set<string> {
  const leaves: string[] = [];
  for (let node = machine.root; node.type === "compound"; node = node.initial.target[0] as StateNode) leaves.push(node.initial.target[0]!.path.join("."));
  for (const trace of traces) for (const e of trace) if (e[0] === "step") leaves.push(e[1] as string);
  const visited = new Set<string>();
  for (const leaf of leaves) {
    const parts = leaf.split(".");
    for (let i = 1; i <= parts.length; i++) visited.add(parts.slice(0, i).join("."));
  }
  return visited;
}

describe("the react machine, as xstate's actor runs it", () => {
  const reactAction = (rng: Random, n: number): ReactAction => {
    const base = { observe: rng.chance(0.5) ? `saw ${n}` : "", thought: rng.chance(0.5) ? `think ${n}` : "" };
    switch (rng.pick(["CALL_TOOL", "PLAN", "REMEND", "INVALID", "ANSWER"] as const)) {
      case "CALL_TOOL":
        return { ...base, action_type: "CALL_TOOL", calls: [{ id: `c${n}`, name: rng.pick(["search", "terminate"]), arguments: "{}" }] };
      case "PLAN":
        return { ...base, action_type: "PLAN", plan: `1. step ${n}` };
      case "REMEND":
        return { ...base, action_type: "REMEND", plan: `1. again ${n}` };
      case "INVALID":
        return { ...base, action_type: "INVALID", error: `bad reply ${n}` };
      case "ANSWER":
        return { ...base, action_type: "ANSWER", answer: `answer ${n}` };
    }
  };
  const outcome = (rng: Random, n: number): ToolOutcome => {
    const tool = rng.pick(["search", "terminate"]);
    const ok = rng.chance(0.7);
    const args = tool === "terminate" ? { answer: `done ${n}`, status: rng.pick(["success", "failure"]) } : { q: n };
    return { call_id: `c${n}`, tool, arguments: args, ok, ...(ok ? { result: n } : { error: `failed ${n}` }), duration_ms: 0 };
  };
  const make =
    (seed: number): Make =>
    (trace) => {
      const rng = random(seed);
      let ids = 0;
      let n = 0;
      return {
        actors: {
          callModel: actor(trace, "callModel", () => {
            n++;
            if (rng.chance(0.1)) throw rng.chance(0.5) ? new RuntimeError("MODEL_UNAVAILABLE", `down ${n}`) : new Error(`broken ${n}`);
            return { reply: { content: `reply ${n}`, tool_calls: [], usage: {}, finish_reason: "stop" }, action: reactAction(rng, n) };
          }),
          runTools: actor(trace, "runTools", () => {
            n++;
            if (rng.chance(0.1)) throw new Error(`tools down ${n}`);
            return Array.from({ length: 1 + rng.int(2) }, () => outcome(rng, n));
          }),
        },
        actions: {
          openRecursion: openRecursion(() => `t${++ids}`),
          startRecursion: recorded(trace, "startRecursion"),
          announcePlan: recorded(trace, "announcePlan"),
        },
      };
    };

  it("takes the same microsteps, calls and output for 200 seeded scripts, through every state", async () => {
    const traces: Trace[] = [];
    for (let seed = 1; seed <= 200; seed++) {
      const max_iteration = 1 + (seed % 5);
      traces.push(await compare(reactMachine, make(seed), { max_iteration }, { type: "RUN" }));
    }
    expect(visitedBy(reactMachine, traces)).toEqual(stateNodes(reactMachine));
    // The scripts reach every way a react run ends.
    expect(new Set(traces.map(ended))).toEqual(new Set(["answer", "GAVE_UP", "INTERNAL", "MAX_ITERATION", "MODEL_UNAVAILABLE"]));
  });
});

/** A model's or a service's failure: a RuntimeError (its code kept) or a bare Error. */
function failure(rng: Random, what: string): Error {
  return rng.chance(0.5) ? new RuntimeError("MODEL_UNAVAILABLE", `${what} unavailable`) : new Error(`${what} broke`);
}
const runError = (rng: Random, what: string): RunError => ({ code: rng.pick(["MODEL_BAD_REPLY", "ABORTED", "INTERNAL"] as const), message: `${what} failed` });

describe("plan_and_solve, as xstate's actor runs it", () => {
  const TOOLS = ["write_todos", "create_todo_list", "validate_plan", "terminate", "update_todo_item", "search"];
  const make =
    (seed: number): Make =>
    (trace) => {
      const rng = random(seed);
      // The todo list the guards read; only the actors change it, as in bindPlanAndSolve (src/kinds/plan-and-solve/run.ts).
      const todos = { empty: true, done: false };
      let n = 0;
      const fails = (what: string, p = 0.05) => {
        if (rng.chance(p)) throw failure(rng, what);
      };
      const outcome = (context: PlanAndSolveContext): ToolOutcome => {
        const ok = rng.chance(0.8);
        const tool = context.current?.name ?? "search";
        const result = tool === "validate_plan" ? { valid: rng.chance(0.6) } : `result ${n}`;
        return { call_id: context.current?.id ?? "none", tool, arguments: {}, ok, ...(ok ? { result } : { error: `failed ${n}` }), duration_ms: 0 };
      };
      const step = (context: PlanAndSolveContext): Step => ({ kind: "outcome", outcome: outcome(context) });
      const verdict = (): Verdict => {
        switch (rng.pick(["accepted", "refused", "retry", "invalid", "rejected"] as const)) {
          case "accepted":
            return { kind: "accepted", status: rng.pick(["success", "failure"] as const), ...(rng.chance(0.7) ? { answer: `answer ${n}` } : {}) };
          case "rejected":
            return { kind: "rejected", problems: ["wrong"] };
          case "refused":
            return { kind: "refused" };
          case "retry":
            return { kind: "retry" };
          case "invalid":
            return { kind: "invalid" };
        }
      };
      type Input = { context: PlanAndSolveContext };
      return {
        actors: {
          callModel: actor(trace, "callModel", (): Step => {
            n++;
            fails("model", 0.08);
            const calls = Array.from({ length: rng.int(3) }, (_, i) => ({ id: `c${n}.${i}`, name: rng.pick(TOOLS), arguments: "{}" }));
            return { kind: "reply", reply: { content: `reply ${n}`, tool_calls: calls, usage: {}, finish_reason: "stop" } as unknown as ChatResponse };
          }),
          runTodoTool: actor(trace, "runTodoTool", ({ context }: Input) => {
            fails("todo tool");
            todos.empty = false;
            return step(context);
          }),
          storePlan: actor(trace, "storePlan", () => fails("store")),
          markInProgress: actor(trace, "markInProgress", () => fails("begin")),
          executeTool: actor(trace, "executeTool", ({ context }: Input) => {
            fails("tool");
            return step(context);
          }),
          recordResult: actor(trace, "recordResult", () => fails("record")),
          markCompleted: actor(trace, "markCompleted", () => {
            fails("track");
            todos.done = rng.chance(0.4);
          }),
          validateAnswer: actor(trace, "validateAnswer", () => {
            fails("verify");
            return verdict();
          }),
          formatResponse: actor(trace, "formatResponse", () => {
            fails("format");
            return rng.chance(0.7) ? { answer: `formatted ${n}` } : {};
          }),
          finalSummary: actor(trace, "finalSummary", () => {
            fails("summary", 0.2);
            return rng.chance(0.7) ? { text: `summary ${n}` } : {};
          }),
        },
        guards: {
          doneAtLimit: ({ context }: Input) => context.iteration >= context.max_iteration && todos.done,
          needsPlan: ({ context }: Input) => context.plan_invalid || todos.empty,
          allDone: () => todos.done,
        },
      };
    };

  it("takes the same microsteps, calls and output for 150 seeded scripts, through every state", async () => {
    const traces: Trace[] = [];
    for (let seed = 1; seed <= 150; seed++) traces.push(await compare(planAndSolveMachine, make(seed), { max_iteration: seed % 6 }, { type: "RUN" }));
    expect(visitedBy(planAndSolveMachine, traces)).toEqual(stateNodes(planAndSolveMachine));
    const ends = traces.map(ended);
    // No run rests with nothing left to wait for: a second terminate after a refused one enters ValidateAnswer anew.
    expect(ends).not.toContain("stalled");
    expect(new Set(ends)).toEqual(new Set(["answer", "GAVE_UP", "INTERNAL", "MAX_ITERATION", "MODEL_BAD_REPLY", "MODEL_UNAVAILABLE"]));
  });
});

describe("plan_and_solve_flow, as xstate's actor runs it", () => {
  const make =
    (seed: number): Make =>
    (trace) => {
      const rng = random(seed);
      let n = 0;
      const outcome = <T>(value: () => T, what: string): FlowOutcome<T> => {
        n++;
        if (rng.chance(0.05)) throw failure(rng, what);
        if (rng.chance(0.15)) return { ok: false, error: runError(rng, what), ...(rng.chance(0.3) ? { fatal: true } : {}) };
        return { ok: true, value: value() };
      };
      const steps = () => Array.from({ length: 1 + rng.int(3) }, (_, i) => `step ${n}.${i}`);
      return {
        actors: {
          plan: actor(trace, "plan", () => outcome(steps, "planner")),
          execute: actor(trace, "execute", () => outcome(() => `did ${n}`, "executor")),
          replan: actor(trace, "replan", () => outcome(() => (rng.chance(0.3) ? { response: `answer ${n}` } : { steps: steps() }), "replanner")),
          summarize: actor(trace, "summarize", () => outcome(() => `summary ${n}`, "summary")),
        },
        actions: { planCreated: recorded(trace, "planCreated"), planUpdated: recorded(trace, "planUpdated") },
      };
    };

  it("takes the same microsteps, calls and output for 150 seeded scripts, through every state", async () => {
    const traces: Trace[] = [];
    for (let seed = 1; seed <= 150; seed++) {
      const rng = random(-seed);
      const input = {
        enable_replanner: rng.chance(0.5),
        max_replan_rounds: rng.int(4),
        ...(rng.chance(0.3) ? { pre_plan_steps: ["first", "second"].slice(0, 1 + rng.int(2)) } : {}),
      };
      traces.push(await compare(planAndSolveFlowMachine, make(seed), input));
    }
    expect(visitedBy(planAndSolveFlowMachine, traces)).toEqual(stateNodes(planAndSolveFlowMachine));
    expect(new Set(traces.map(ended))).toEqual(new Set(["answer", "ABORTED", "INTERNAL", "MODEL_BAD_REPLY", "MODEL_UNAVAILABLE"]));
  });
});

describe("plan_solver, as xstate's actor runs it", () => {
  const make =
    (seed: number): Make =>
    (trace) => {
      const rng = random(seed);
      const outcome = <T>(value: () => T, what: string): SolverPhase<T> => {
        // An actor that rejects is a bug: no transition takes it, and the machine fails.
        if (rng.chance(0.05)) throw new Error(`${what} broke`);
        return rng.chance(0.15) ? { ok: false, error: runError(rng, what) } : { ok: true, value: value() };
      };
      const draft = (task: string): SolverOutcome =>
        rng.chance(0.7) ? { task, ok: true, output: `solved ${task}` } : { task, ok: false, error: runError(rng, task) };
      return {
        actors: {
          plan: actor(trace, "plan", () => outcome(() => Array.from({ length: 1 + rng.int(3) }, (_, i) => `task ${i}`), "planner")),
          solve: actor(trace, "solve", ({ tasks }: { tasks: string[] }) => outcome(() => tasks.map(draft), "solvers")),
          aggregate: actor(trace, "aggregate", () => outcome(() => "aggregated", "aggregator")),
        },
        actions: { announcePlan: recorded(trace, "announcePlan") },
      };
    };

  it("takes the same microsteps, calls and output or error for 100 seeded scripts, through every state", async () => {
    const traces: Trace[] = [];
    for (let seed = 1; seed <= 100; seed++) {
      const input = { objective: "the goal", solver: "solver", ...(seed % 2 === 0 ? { aggregator: "aggregator" } : {}) };
      traces.push(await compare(planSolverMachine, make(seed), input));
    }
    expect(visitedBy(planSolverMachine, traces)).toEqual(stateNodes(planSolverMachine));
    expect(new Set(traces.map(ended))).toEqual(new Set(["answer", "ABORTED", "INTERNAL", "MODEL_BAD_REPLY", "throw"]));
  });
});

describe("sop, as xstate's actor runs it", () => {
  const planOf = (rng: Random, n: number): PlanInstance => {
    const task = (id: string): TaskInfo => ({
      task_id: id,
      step_id: "s1",
      name: `task ${id}`,
      assignee: "worker",
      description: "",
      optional: rng.chance(0.2),
      status: rng.pick(["ready", "inprogress", "completed", "error", "skipped"] as const),
      result_summary: rng.chance(0.5) ? `summary of ${id}` : null,
      updated_at: "2026-01-01T00:00:00Z",
    });
    const status = rng.pick(["running", "running", "completed", "error"] as const);
    const steps = [{ step_id: "s1", name: "step one", description: "", status, tasks: [task("t1"), task("t2")] }];
    const times = { created_at: "2026-01-01T00:00:00Z", updated_at: "2026-01-01T00:00:00Z" };
    return { plan_id: `p${n}`, name: "plan", description: "", workflow_template_source: "WF", status, revision: n, run_task_id: null, ...times, steps };
  };
  const make =
    (seed: number): Make =>
    (trace) => {
      const rng = random(seed);
      let n = 0;
      return {
        actors: {
          // Creating or reading the plan fails only on a bug: no transition takes it, and the machine fails.
          createPlan: actor(trace, "createPlan", () => {
            if (rng.chance(0.05)) throw new Error("plan tool broke");
            return rng.chance(0.15) ? { ok: false, error: { code: "CONFIG_INVALID", message: "no plan" } } : { ok: true };
          }),
          readPlan: actor(trace, "readPlan", () => {
            if (rng.chance(0.05)) throw new RuntimeError("NOT_FOUND", "plan disappeared");
            return planOf(rng, ++n);
          }),
          drive: actor(trace, "drive", (): Round => {
            const outcome = rng.pick(["answered", "answered", "failed", "interrupted"] as const);
            if (outcome === "answered") return { outcome, answer: `round ${n}` };
            return outcome === "failed" ? { outcome, error: runError(rng, "strategist") } : { outcome };
          }),
        },
        actions: { announcePlan: recorded(trace, "announcePlan") },
      };
    };

  it("takes the same microsteps, calls and output or error for 100 seeded scripts, through every state", async () => {
    const traces: Trace[] = [];
    for (let seed = 1; seed <= 100; seed++) traces.push(await compare(sopMachine, make(seed), { strategist: "boss" }));
    expect(visitedBy(sopMachine, traces)).toEqual(stateNodes(sopMachine));
    expect(new Set(traces.map(ended))).toEqual(
      new Set(["answer", "ABORTED", "CONFIG_INVALID", "GAVE_UP", "INTERNAL", "MAX_ITERATION", "MODEL_BAD_REPLY", "throw"]),
    );
  });
});

/** What a synthetic machine's actor ends with: a value, an error, or a value after the other actors' (a timer later). */
type Scripted = { value: number } | { error: string } | { late: number };
const stub = async (): Promise<never> => {
  throw new Error("not provided");
};
/** The synthetic machines' implementations: each actor's results in turn from `script`, `note` recorded. */
const synthetic =
  (script: Record<string, Scripted[]>): Make =>
  (trace) => {
    const queues = Object.fromEntries(Object.entries(script).map(([k, v]) => [k, [...v]]));
    const scripted = (name: string) =>
      actor(trace, name, async () => {
        const next = queues[name]?.shift() ?? { error: `${name}: script ran out` };
        if ("error" in next) throw new Error(next.error);
        if ("late" in next) await new Promise((resolve) => setTimeout(resolve, 0));
        return "late" in next ? next.late : next.value;
      });
    return {
      actors: Object.fromEntries(Object.keys(script).map((name) => [name, scripted(name)])),
      actions: { note: recorded(trace, "note") },
    };
  };

const note = (what: string) => ({ type: "note" as const, params: { what } });

/**
 * Nested compound states, `always` with inline and named guards, reentry,
 * done events with outputs, both forms of assign, entry and exit order, an
 * event an initial action sends (it waits for the start, and comes before the start event).
 */
const nestedMachine = setup({
  types: {
    context: {} as { n: number; trail: string[]; outputs: unknown[] },
    input: {} as { n: number },
    events: {} as { type: "GO" } | { type: "TICK" },
  },
  actions: { note: (_, _params: { what: string }) => {} },
  guards: { atLeast: ({ context }, params: { n: number }) => context.n >= params.n },
}).createMachine({
  id: "nested",
  context: ({ input }) => ({ n: input.n, trail: [], outputs: [] }),
  initial: "IDLE",
  entry: note("root"),
  exit: note("root exit"),
  states: {
    IDLE: {
      entry: [note("IDLE"), ({ self }) => self.send({ type: "TICK" })],
      exit: note("IDLE exit"),
      on: {
        TICK: { actions: [note("TICK"), assign({ trail: ({ context }) => [...context.trail, "TICK"] })] },
        GO: { target: "LOOP", actions: note("GO") },
      },
    },
    LOOP: {
      initial: "COUNT",
      entry: [note("LOOP"), assign({ trail: ({ context }) => [...context.trail, "LOOP"] })],
      exit: note("LOOP exit"),
      onDone: [
        {
          guard: ({ event }) => (event.output as { n: number }).n < 6,
          target: "LOOP",
          reenter: true,
          actions: assign(({ context, event }) => ({ outputs: [...context.outputs, event.output] })),
        },
        { target: "END", actions: [note("loop done"), assign({ outputs: ({ context, event }) => [...context.outputs, event.output] })] },
      ],
      states: {
        COUNT: {
          entry: [note("COUNT"), assign(({ context }) => ({ n: context.n + 1 }))],
          exit: note("COUNT exit"),
          always: [
            { guard: { type: "atLeast", params: { n: 5 } }, target: "INNER", actions: note("at least 5") },
            { guard: ({ context }) => context.n % 3 !== 0, target: "COUNT", reenter: true, actions: note("again") },
            { target: "INNER" },
          ],
        },
        INNER: {
          initial: "DEEP",
          entry: note("INNER"),
          exit: note("INNER exit"),
          onDone: { target: "FINISHED", actions: assign(({ context, event }) => ({ trail: [...context.trail, JSON.stringify(event.output)] })) },
          states: {
            DEEP: { entry: note("DEEP"), exit: note("DEEP exit"), always: { target: "LAST", actions: assign({ n: ({ context }) => context.n + 1 }) } },
            LAST: { type: "final", entry: note("LAST"), output: ({ context }) => ({ deep: context.n }) },
          },
        },
        FINISHED: { type: "final", entry: note("FINISHED"), output: ({ context }) => ({ n: context.n }) },
      },
    },
    END: { type: "final", entry: note("END"), exit: note("END exit"), output: ({ context }) => context.n * 2 },
  },
  output: ({ context, event }) => ({ n: context.n, trail: context.trail, outputs: context.outputs, event }),
});

/**
 * Invoked actors: an input mapper read as the state is entered, onDone and
 * onError, an outer actor whose state is left before it ends (its signal
 * aborted, its late result dropped), an actor's state left and re-entered
 * within one macrostep, an actor failing where no transition takes its error.
 */
const invokingMachine = setup({
  types: {
    context: {} as { n: number; got: unknown[]; error?: string },
    input: {} as { n: number },
  },
  actors: {
    outer: fromPromise<number, { n: number }>(stub),
    work: fromPromise<number, { n: number; event: string }>(stub),
    bare: fromPromise<number, { n: number }>(stub),
  },
  actions: { note: (_, _params: { what: string }) => {} },
}).createMachine({
  id: "invoking",
  context: ({ input }) => ({ n: input.n, got: [] }),
  initial: "OUTER",
  states: {
    OUTER: {
      entry: note("OUTER"),
      exit: note("OUTER exit"),
      invoke: { id: "outer", src: "outer", input: ({ context }) => ({ n: context.n }), onDone: { target: "LATE" } },
      initial: "WORK",
      states: {
        WORK: {
          // After OUTER's actor took its input, before WORK's takes its own.
          entry: [assign({ n: ({ context }) => context.n + 10 }), note("WORK")],
          exit: note("WORK exit"),
          invoke: {
            src: "work",
            input: ({ context, event }) => ({ n: context.n, event: event.type }),
            onDone: [
              { guard: ({ event }) => event.output === 0, target: "#invoking.DONE" },
              { guard: ({ event }) => event.output === 1, target: "BARE" },
              { guard: ({ event }) => event.output < 0, target: "WORK", reenter: true, actions: note("retry") },
              { target: "AGAIN", actions: assign(({ context, event }) => ({ got: [...context.got, event.output] })) },
            ],
            onError: { target: "#invoking.FAILED", actions: assign({ error: ({ event }) => message(event.error) }) },
          },
        },
        // Left and entered again until n is a multiple of 3, in one macrostep: only the last entry's actor starts.
        AGAIN: {
          entry: assign(({ context }) => ({ n: context.n + 1 })),
          invoke: {
            src: "work",
            input: ({ context, event }) => ({ n: context.n, event: event.type }),
            onDone: [{ guard: ({ event }) => event.output === 0, target: "#invoking.DONE" }, { target: "WORK" }],
            onError: { target: "#invoking.FAILED", actions: assign({ error: ({ event }) => message(event.error) }) },
          },
          always: { guard: ({ context }) => context.n % 3 !== 0, target: "AGAIN", reenter: true },
        },
        // No onError: its failure fails the machine.
        BARE: { invoke: { src: "bare", input: ({ context }) => ({ n: context.n }), onDone: "#invoking.DONE" } },
      },
    },
    LATE: { type: "final", entry: note("LATE") },
    DONE: { type: "final", entry: note("DONE") },
    FAILED: { type: "final", entry: note("FAILED") },
  },
  output: ({ context }) => context,
});

/** An action that throws, wherever it is: in the initial states (deferred to the start), on a transition, on entry, an assignment. */
const throwingMachine = setup({
  types: {
    context: {} as { at: string; n: number },
    input: {} as { at: string },
  },
  actors: { work: fromPromise<number>(stub), outer: fromPromise<number>(stub) },
  actions: {
    note: (_, _params: { what: string }) => {},
    /** Throws when given where it is (the test's own implementation). */
    boom: (_, _params: { at: string }) => {},
  },
  guards: {
    at: ({ context }, params: { at: string }) => context.at === params.at,
    explodes: ({ context }, params: { at: string }) => {
      if (context.at === params.at) throw new Error(`boom ${params.at}`);
      return false;
    },
  },
}).createMachine({
  id: "throwing",
  context: ({ input }) => ({ at: input.at, n: 0 }),
  initial: "START",
  states: {
    START: {
      entry: [note("START"), { type: "boom", params: ({ context }) => ({ at: context.at === "initial" ? "initial" : "" }) }],
      always: [{ guard: { type: "explodes", params: { at: "always guard" } }, target: "END" }, { target: "RUN" }],
    },
    RUN: {
      invoke: { id: "outer", src: "outer", onDone: "END" },
      initial: "STEP",
      states: {
        STEP: {
          invoke: {
            src: "work",
            onDone: [
              { guard: { type: "explodes", params: { at: "guard" } }, target: "#throwing.END" },
              {
                guard: { type: "at", params: { at: "transition" } },
                target: "NEXT",
                actions: [note("before"), { type: "boom", params: { at: "transition" } }],
              },
              {
                guard: { type: "at", params: { at: "assign" } },
                target: "NEXT",
                actions: assign(() => {
                  throw new Error("boom assign");
                }),
              },
              { target: "NEXT" },
            ],
          },
        },
        NEXT: { entry: [note("NEXT"), { type: "boom", params: ({ context }) => ({ at: context.at === "entry" ? "entry" : "" }) }] },
      },
    },
    END: { type: "final" },
  },
});

describe("a synthetic machine, as xstate's actor runs it", () => {
  it("nested states, guards, reentry, done events and outputs, assign, entry and exit", async () => {
    const traces: Trace[] = [];
    for (let n = 0; n < 8; n++) traces.push(await compare(nestedMachine, synthetic({}), { n }, { type: "GO" }));
    expect(visitedBy(nestedMachine, traces)).toEqual(stateNodes(nestedMachine));
    // The initial action's TICK came before GO.
    for (const trace of traces) expect((trace.at(-1)![1] as { trail: string[] }).trail.slice(0, 2)).toEqual(["TICK", "LOOP"]);
  });

  it("invoked actors: input, done, error, left before they end, left and re-entered, failing unhandled", async () => {
    const cases: Record<string, Scripted[]>[] = [
      { outer: [{ late: 7 }], work: [{ value: 0 }] },
      { outer: [{ late: 7 }], work: [{ value: 5 }, { value: 2 }, { value: -1 }, { value: 0 }] },
      { outer: [{ late: 7 }], work: [{ value: 4 }, { value: 0 }] },
      { outer: [{ late: 7 }], work: [{ error: "work failed" }] },
      { outer: [{ value: 7 }], work: [{ late: 5 }] },
      { outer: [{ late: 7 }], work: [{ value: 1 }], bare: [{ error: "bare failed" }] },
      { outer: [{ late: 7 }], work: [{ value: 1 }], bare: [{ value: 3 }] },
    ];
    const traces: Trace[] = [];
    for (const [i, script] of cases.entries()) traces.push(await compare(invokingMachine, synthetic(script), { n: i + 1 }));
    expect(visitedBy(invokingMachine, traces)).toEqual(stateNodes(invokingMachine));
    // AGAIN was entered three times in a row, its actor started once.
    const again = traces[1]!.filter((e) => e[0] === "step" && e[1] === "OUTER.AGAIN");
    expect(again.length).toBeGreaterThanOrEqual(3);
    expect(traces[1]!.filter((e) => e[0] === "start" && e[1] === "work")).toHaveLength(4);
    const flat = traces.flat().map((e) => JSON.stringify(e));
    expect(flat).toContain(JSON.stringify(["abort", "outer"]));
    expect(flat).toContain(JSON.stringify(["error", "bare failed"]));
  });

  it("an action or a guard that throws fails the run", async () => {
    // Where it throws, and the actors at work then (see `compare`).
    const cases: Record<string, string[]> = {
      none: [],
      initial: ["outer", "work"],
      "always guard": [],
      guard: ["outer"],
      transition: ["outer"],
      assign: ["outer"],
      entry: ["outer"],
    };
    // xstate's actor warns of the late results its orphans send it.
    const warn = vi.spyOn(console, "warn").mockImplementation(() => {});
    for (const [at, orphans] of Object.entries(cases)) {
      const make: Make = (trace) => {
        const implementations = synthetic({ outer: [{ late: 1 }], work: [{ value: 1 }] })(trace);
        const boom = (args: { context: unknown; event: Event }, params: { at: string }) => {
          recorded(trace, "boom")(args, params);
          if (params.at !== "") throw new Error(`boom ${params.at}`);
        };
        return { ...implementations, actions: { ...implementations.actions, boom } };
      };
      const trace = await compare(throwingMachine, make, { at }, undefined, orphans);
      const error =
        at === "guard"
          ? `Unable to evaluate guard 'explodes' in transition for event 'xstate.done.actor.0.throwing.RUN.STEP' in state node 'throwing.RUN.STEP':\nboom guard`
          : `boom ${at}`;
      expect(trace.at(-1)).toEqual(at === "none" ? ["output", undefined] : ["error", error]);
    }
    warn.mockRestore();
  });
});

describe("what the compiler refuses", () => {
  it("a parallel state, a delayed transition, a transition with several targets", () => {
    const parallel = createMachine({ id: "p", initial: "A", states: { A: { type: "parallel", states: { X: {}, Y: {} } } } });
    expect(() => compile(parallel)).toThrow("machine p: state p.A is a parallel state");
    const delayed = createMachine({ id: "d", initial: "A", states: { A: { after: { 10: "B" } }, B: {} } });
    expect(() => compile(delayed)).toThrow("machine d: state d.A has delayed transitions");
    const several = createMachine({ id: "s", initial: "A", states: { A: { initial: "X", states: { X: {}, Y: {} }, on: { GO: { target: [".X", ".Y"] } } } } });
    expect(() => compile(several)).toThrow("machine s: the 'GO' transition of state s.A has several targets");
  });
});
