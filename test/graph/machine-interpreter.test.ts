/**
 * The interpreter (src/machine-interpreter/) against xstate's own actor,
 * the reference: the same machine definitions, the same events, compared
 * microstep by microstep (state, context, the transition's source), with the
 * actions' calls, the output or the error. The react machine is driven by
 * seeded random scripts of replies, tool outcomes and failures; a test
 * machine covers the rest of what the interpreter claims to run.
 */
import { describe, expect, it, vi } from "vitest";
import type { AnyStateMachine, InspectionEvent } from "xstate";
import { and, assign, createActor, createMachine, emit, enqueueActions, fromPromise, log, raise, sendTo, setup, toPromise } from "xstate";
import { compileMachine, startMachine, UnsupportedMachine } from "../../src/machine-interpreter/index.js";
import { reactMachine, type ReactPorts, type Understood } from "../../src/kinds/react/machine.js";
import type { ReactAction } from "../../src/kinds/react/protocol.js";
import type { ToolOutcome } from "../../src/tools/types.js";
import { stateInspector, statePath, stateReporter } from "../../src/engine/state-reporter.js";

/** A small seeded generator (mulberry32), so a failing case can be run again. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a run did, in order: each microstep (state, source, context) and each call the machine's actions made, then how it ended. */
interface Trace {
  log: string[];
  result: string;
}

/** The context as JSON, functions (ports, newId) left out. */
const json = (value: unknown): string => JSON.stringify(value, (_k, v: unknown) => (typeof v === "function" ? undefined : v));

/** What a test sends the machine once it has started. */
type Drive = (send: (e: { type: string }) => void) => Promise<void>;

/** How long a run may take to end after its events: `tick`, one turn of the event loop (every event sent at once), or `end`, until done (2 s at most). */
type Wait = "tick" | "end";
const rest = (wait: Wait, state: () => string) => new Promise<string>((r) => setTimeout(() => r(state()), wait === "tick" ? 0 : 2000));

/** Run `machine` under xstate's actor; `log` is where its actions write too. */
async function underXstate(machine: AnyStateMachine, input: unknown, drive: Drive, log: string[], wait: Wait): Promise<Trace> {
  const inspect = (event: InspectionEvent) => {
    if (event.type !== "@xstate.microstep" || event.actorRef.sessionId !== event.rootId) return;
    const snapshot = event.snapshot as unknown as { value: unknown; context: unknown };
    const source = (event as { _transitions?: { source?: { path?: string[] } }[] })._transitions?.[0]?.source?.path?.join(".") ?? "";
    log.push(`step ${statePath(snapshot.value)} <- ${source} ${json(snapshot.context)}`);
  };
  const actor = createActor(machine, { input, inspect });
  const done = new Promise<string>((resolve) => {
    actor.subscribe({
      complete: () => resolve(`output ${json(actor.getSnapshot().output)}`),
      error: (err) => resolve(`error ${(err as Error).message}`),
    });
  });
  actor.start();
  await drive((e) => actor.send(e as never));
  const result = await Promise.race([done, rest(wait, () => `resting in ${statePath(actor.getSnapshot().value)}`)]);
  return { log, result };
}

/** The same under the interpreter. */
async function underInterpreter(machine: AnyStateMachine, input: unknown, drive: Drive, log: string[], wait: Wait): Promise<Trace> {
  const run = startMachine(compileMachine(machine), {
    input: input as never,
    observe: (to, context, source) => log.push(`step ${to} <- ${source} ${json(context)}`),
  });
  const done = run.output.then(
    (output) => `output ${json(output)}`,
    (err: unknown) => `error ${(err as Error).message}`,
  );
  await drive((e) => run.send(e as never));
  const result = await Promise.race([done, rest(wait, () => `resting in ${run.value}`)]);
  return { log, result };
}

/** One scripted react run: what each model call and tool round does, drawn from `seed`. */
function reactScript(seed: number) {
  const next = random(seed);
  const pick = <T>(items: T[]): T => items[Math.floor(next() * items.length)]!;
  const max_iteration = 1 + Math.floor(next() * 6);
  const replies: (ReactAction | "fail")[] = [];
  const rounds: (ToolOutcome[] | "fail")[] = [];
  for (let i = 0; i < 8; i++) {
    const kind = pick(["tool", "tool", "tool", "plan", "remend", "invalid", "answer", "fail"]);
    const base = { observe: next() < 0.5 ? `saw ${i}` : "", thought: next() < 0.5 ? `think ${i}` : "" };
    if (kind === "tool") {
      const terminate = next() < 0.2;
      const call = { id: `c${i}`, name: terminate ? "terminate" : "calculator", arguments: "{}" };
      replies.push({ action_type: "CALL_TOOL", ...base, calls: [call] });
      const args = terminate ? { answer: next() < 0.5 ? `done ${i}` : { n: i }, status: pick(["success", "failure"]) } : { expression: "1+1" };
      rounds.push(next() < 0.15 ? "fail" : [{ call_id: call.id, tool: call.name, arguments: args, ok: next() < 0.9, result: 2, duration_ms: 0 }]);
    } else if (kind === "plan" || kind === "remend") {
      replies.push({ action_type: kind === "plan" ? "PLAN" : "REMEND", ...base, plan: next() < 0.8 ? `1. step ${i}\n2. more` : "" });
    } else if (kind === "invalid") {
      replies.push({ action_type: "INVALID", ...base, error: `bad reply ${i}` });
    } else if (kind === "answer") {
      replies.push({ action_type: "ANSWER", ...base, answer: `answer ${i}` });
    } else replies.push("fail");
  }
  return { max_iteration, replies, rounds };
}

/** The react machine's input for a script; its ports write every call into `log`. */
function reactInput(script: ReturnType<typeof reactScript>, log: string[]) {
  const calls = log;
  let ids = 0;
  let model = 0;
  let tools = 0;
  const ports: ReactPorts = {
    callModel: async (input) => {
      calls.push(`model ${json(input)}`);
      const reply = script.replies[model++ % script.replies.length]!;
      if (reply === "fail") throw new Error(`model call ${model} failed`);
      return { reply: { content: "", tool_calls: [], usage: { prompt_tokens: 1, completion_tokens: 2, total_tokens: 3 } }, action: reply } as unknown as Understood;
    },
    runTools: async (input) => {
      calls.push(`tools ${json(input)}`);
      const round = script.rounds[tools++ % Math.max(1, script.rounds.length)] ?? [];
      if (round === "fail") throw new Error("the toolbox broke");
      return round;
    },
    startRecursion: (p) => void calls.push(`recursion ${json(p)}`),
    announcePlan: (p) => void calls.push(`plan ${json(p)}`),
  };
  return { max_iteration: script.max_iteration, newId: () => `t${++ids}`, ports };
}


describe("the machine interpreter", () => {
  it("runs the react machine as xstate's actor does, microstep by microstep (400 seeded scripts)", async () => {
    const outcomes = new Set<string>();
    for (let seed = 1; seed <= 400; seed++) {
      const script = reactScript(seed);
      const runs: Trace[] = [];
      for (const under of [underXstate, underInterpreter]) {
        const log: string[] = [];
        runs.push(await under(reactMachine, reactInput(script, log), async (send) => send({ type: "RUN" }), log, "end"));
      }
      expect(runs[1], `seed ${seed}`).toEqual(runs[0]);
      outcomes.add(runs[0]!.result.replace(/\d+/g, "N").slice(0, 40));
    }
    // The scripts reach every ending: answers (a reply, terminate), errors (terminate, max_iteration, a failed call).
    expect([...outcomes].some((o) => o.includes('"result_type":"answer"'))).toBe(true);
    expect([...outcomes].some((o) => o.includes('"result_type":"error"'))).toBe(true);
  });

  /** A machine with what the react machine does not use but the interpreter claims to run. */
  const testMachine = setup({
    types: { context: {} as { n: number; log: string[]; limit: number }, input: {} as { limit: number }, events: {} as { type: string; by?: number } },
    actions: {
      note: ({ context }, params: { what: string }) => void context.log.push(`${params.what}@${context.n}`),
      bump: assign(({ context }, params: { by: number }) => ({ n: context.n + params.by })),
      boom: () => {
        throw new Error("an action threw");
      },
      echo: ({ self }) => self.send({ type: "ECHOED" }),
    },
    guards: {
      above: ({ context }, params: { than: number }) => context.n > params.than,
      broken: () => {
        throw new Error("a guard threw");
      },
    },
  }).createMachine({
    id: "test",
    context: ({ input }) => ({ n: 0, log: [], limit: input.limit }),
    entry: { type: "note", params: { what: "root-entry" } },
    exit: { type: "note", params: { what: "root-exit" } },
    on: { JUMP: ".C" },
    initial: "A",
    states: {
      A: {
        initial: "A1",
        entry: { type: "note", params: { what: "A-entry" } },
        exit: { type: "note", params: { what: "A-exit" } },
        // A targetless transient transition of an ancestor: taken before the done event of A3.
        always: { guard: ({ context }) => context.n >= 10 && context.n < 20, actions: assign(({ context }) => ({ n: context.n + 10 })) },
        on: {
          UP: { actions: [{ type: "bump", params: { by: 1 } }] },
          RE: { target: "A", reenter: true },
          SAME: { target: "A" },
          ECHO: { actions: "echo" },
          ECHOED: { actions: assign({ n: ({ context }) => context.n + 100 }) },
          GO: [{ guard: { type: "above", params: { than: 2 } }, target: "B" }, { target: ".A2" }],
          BAD_GUARD: { guard: "broken", target: "B" },
          BAD_ACTION: { actions: "boom" },
        },
        states: {
          A1: {
            entry: { type: "note", params: { what: "A1-entry" } },
            exit: { type: "note", params: { what: "A1-exit" } },
            on: { UP: { actions: [{ type: "bump", params: { by: 2 } }] }, NEXT: "A2" },
          },
          A2: { on: { NEXT: { target: "A3", actions: assign(({ context }) => ({ n: context.n + 10 })) }, BACK: "#test.A" } },
          A3: { type: "final", output: ({ context }) => ({ at: context.n }) },
        },
        onDone: { target: "COUNT", actions: assign(({ event }) => ({ log: [`done ${json((event as { output?: unknown }).output)}`] })) },
      },
      B: {
        // Taken once: a transient transition that changes neither the state nor the context is not taken again.
        always: { guard: ({ context }) => context.n > 50, actions: { type: "note", params: { what: "B-always" } } },
        on: { NEXT: "COUNT", UP: { actions: [{ type: "bump", params: { by: 5 } }] }, GO: "C" },
      },
      C: {
        // No onDone: C2's done event changes nothing, and the transient transition that reads it is taken after it.
        initial: "C1",
        states: { C1: { on: { NEXT: "C2" } }, C2: { type: "final" } },
        always: { guard: ({ event }) => event.type === "xstate.done.state.test.C", target: "COUNT" },
      },
      COUNT: {
        // A transient loop that ends when its context stops the guard.
        always: [{ guard: ({ context }) => context.n >= context.limit, target: "END" }, { actions: assign(({ context }) => ({ n: context.n + 1 })) }],
      },
      END: { type: "final" },
    },
    output: ({ context, event }) => ({ n: context.n, log: context.log, event: event.type }),
  });

  it("runs what it claims as xstate does: nesting, reentry, exits, params, guards, done events, transient loops, errors (300 seeded event sequences)", async () => {
    // xstate's development build warns of each event sent after the end; the sequences send some on purpose.
    const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const alphabet = ["UP", "RE", "SAME", "ECHO", "GO", "NEXT", "BACK", "NOPE", "UP", "NEXT", "JUMP", "BAD_GUARD", "BAD_ACTION"];
    const results = new Set<string>();
    for (let seed = 1; seed <= 300; seed++) {
      const next = random(seed);
      const events = Array.from({ length: 1 + Math.floor(next() * 10) }, () => alphabet[Math.floor(next() * alphabet.length)]!);
      // The rarer failures only now and then, so most sequences get somewhere.
      const sequence = events.filter((e) => !e.startsWith("BAD") || next() < 0.3);
      const limit = Math.floor(next() * 8);
      const runs: Trace[] = [];
      for (const under of [underXstate, underInterpreter]) {
        runs.push(
          await under(testMachine, { limit }, async (send) => sequence.forEach((type) => send({ type })), [], "tick"),
        );
      }
      expect(runs[1], `seed ${seed}: ${sequence.join(" ")} (limit ${limit})`).toEqual(runs[0]);
      results.add(runs[0]!.result.split(" ")[0]!);
    }
    expect([...results].sort()).toEqual(["error", "output", "resting"]);
    warn.mockRestore();
  });

  /** A machine whose start does something: initial actions, a transient transition, an event it sends itself, a throw. */
  const startingMachine = setup({
    types: { context: {} as { n: number; log: string[] }, input: {} as { n: number }, events: {} as { type: "GO" } },
    actions: {
      note: ({ context }, params: { what: string }) => void context.log.push(`${params.what}@${context.n}`),
      go: ({ self }) => self.send({ type: "GO" }),
      boom: ({ context }) => {
        if (context.n === 3) throw new Error("an initial action threw");
      },
    },
  }).createMachine({
    id: "starting",
    context: ({ input }) => ({ n: input.n, log: [] }),
    entry: [{ type: "note", params: { what: "root" } }, "go"],
    exit: { type: "note", params: { what: "root-exit" } },
    initial: "S",
    states: {
      S: {
        entry: [{ type: "note", params: { what: "S" } }, "boom"],
        always: { guard: ({ context }) => context.n > 0, target: "T", actions: [assign(({ context }) => ({ n: context.n - 1 })), { type: "note", params: { what: "S-always" } }] },
        on: { GO: "U" },
      },
      T: { entry: { type: "note", params: { what: "T" } }, always: { guard: ({ context }) => context.n > 5, target: "F" }, on: { GO: "U" } },
      U: { type: "final", entry: { type: "note", params: { what: "U" } } },
      F: { type: "final" },
    },
    output: ({ context }) => context.log,
  });

  it("starts as xstate's actor starts: initial actions after the initial microsteps, then what they sent", async () => {
    const results = new Set<string>();
    for (let n = 0; n <= 8; n++) {
      const runs: Trace[] = [];
      for (const under of [underXstate, underInterpreter]) runs.push(await under(startingMachine, { n }, async () => undefined, [], "tick"));
      expect(runs[1], `n ${n}`).toEqual(runs[0]);
      results.add(runs[0]!.result.split(" ")[0]!);
    }
    expect([...results].sort()).toEqual(["error", "output"]);
  });

  it("reports the react machine's states as the xstate inspector does, in order with the run's other events (40 seeded scripts)", async () => {
    /** A bus as far as the reporter sees it: held work runs before the next event, a recursion's own work after its recursion.started (src/events/bus.ts). */
    const bus = (log: string[]) => {
      const held = new Map<() => void, string | undefined>();
      const emit = (body: { type: string }, trace_id?: string) => {
        for (const [flush, id] of [...held]) {
          if (body.type === "recursion.started" && id === trace_id) continue;
          held.delete(flush);
          flush();
        }
        log.push(`${json(body)} ${trace_id ?? ""}`);
      };
      return {
        emit,
        ports: {
          emit: (body: { type: string }, extra?: { trace_id?: string }) => emit(body, extra?.trace_id),
          deferUntilNext: (flush: () => void, trace_id?: string) => void held.set(flush, trace_id),
        },
        close: () => [...held.keys()].forEach((flush) => flush()),
      };
    };
    /** The script's input, its recursions and plans emitted on `b` as the react runner emits them. */
    const input = (script: ReturnType<typeof reactScript>, b: ReturnType<typeof bus>) => {
      const base = reactInput(script, []);
      base.ports.startRecursion = (p) => b.emit({ type: "recursion.started", iteration: p.iteration } as { type: string }, p.trace_id);
      base.ports.announcePlan = (p) => b.emit({ type: "plan", plan: p.plan } as { type: string }, p.trace_id);
      return base;
    };
    const traceId = (context: unknown) => (context as { trace_id: string }).trace_id;
    let changes = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const script = reactScript(seed);
      const reported: string[][] = [[], []];
      const first = bus(reported[0]!);
      const actor = createActor(reactMachine, { input: input(script, first), inspect: stateInspector("react", first.ports, { traceId }) });
      actor.start();
      actor.send({ type: "RUN" });
      await toPromise(actor).catch(() => undefined);
      first.close();
      const second = bus(reported[1]!);
      const run = startMachine(compileMachine(reactMachine), { input: input(script, second), observe: stateReporter("react", second.ports, { traceId }) });
      run.send({ type: "RUN" });
      await run.output.catch(() => undefined);
      second.close();
      changes += reported[0]!.filter((e) => e.includes("state.changed")).length;
      expect(reported[1], `seed ${seed}`).toEqual(reported[0]);
    }
    expect(changes).toBeGreaterThan(60);
  });

  it("refuses a machine that uses more of XState than it runs, saying what", () => {
    const cases: [AnyStateMachine, RegExp][] = [
      [createMachine({ id: "p", type: "parallel", states: { a: {}, b: {} } }), /state p is a parallel state/],
      [createMachine({ id: "h", initial: "a", states: { a: {}, hist: { type: "history" } } }), /state h.hist is a history state/],
      [setup({ actors: { work: fromPromise(async () => 1) } }).createMachine({ id: "i", initial: "a", states: { a: { invoke: { src: "work" } } } }), /state i.a invokes an actor/],
      [createMachine({ id: "d", initial: "a", states: { a: { after: { 100: "b" } }, b: {} } }), /state d.a has delayed transitions/],
      [createMachine({ id: "w", initial: "a", states: { a: { on: { "*": "b" } }, b: {} } }), /wildcard transition '\*'/],
      [createMachine({ id: "r", initial: "a", states: { a: { entry: raise({ type: "X" }) } } }), /built-in action xstate.raise/],
      [setup({ guards: { yes: () => true } }).createMachine({ id: "g", initial: "a", states: { a: { on: { X: { guard: and(["yes", "yes"]), target: "b" } } }, b: {} } }), /built-in guard/],
      [createMachine({ id: "u", initial: "a", states: { a: { entry: "missing" } } }), /action 'missing' of state u.a is not implemented/],
      [createMachine({ id: "ug", initial: "a", states: { a: { on: { X: { guard: "missing", target: "b" } } }, b: {} } }), /guard 'missing' of the 'X' transition of state ug.a is not implemented/],
      [createMachine({ id: "s", initial: "a", states: { a: { entry: sendTo(({ self }) => self, { type: "X" }) } } }), /built-in action xstate.sendTo/],
      [createMachine({ id: "l", initial: "a", states: { a: { entry: log("hello") } } }), /built-in action xstate.log/],
      [createMachine({ id: "e", initial: "a", states: { a: { entry: emit({ type: "X" }) } } }), /built-in action xstate.emit/],
      [createMachine({ id: "q", initial: "a", states: { a: { entry: enqueueActions(() => undefined) } } }), /built-in action xstate.enqueueActions/],
      [createMachine({ id: "m", initial: "a", states: { a: { on: { X: { target: ["b.b1", "c.c1"] } } }, b: { initial: "b1", states: { b1: {} } }, c: { initial: "c1", states: { c1: {} } } } }), /the 'X' transition of state m.a has several targets/],
      [createMachine({ id: "n", initial: "a", states: { a: { initial: { target: "a1", actions: () => undefined } as never, states: { a1: {} } } } }), /state n.a has actions on its initial transition/],
      [createMachine({ id: "f", type: "final" }), /its root is a final state/],
      [createMachine({ id: "x", initial: "a", options: { maxIterations: 100 }, states: { a: {} } } as never), /it sets maxIterations/],
    ];
    for (const [machine, why] of cases) {
      expect(() => compileMachine(machine)).toThrow(UnsupportedMachine);
      expect(() => compileMachine(machine)).toThrow(why);
    }
  });
});
