/**
 * A lean interpreter for the machines on a run's hot path
 * (docs/design/engine.md#the-interpreter). The machines stay XState
 * definitions, state for state as the seed diagrams draw them, and xstate's
 * `createActor` remains the reference: test/graph/machine-interpreter.test.ts
 * runs
 * machines through both and compares them microstep by microstep.
 *
 * What it saves: xstate works out the exit and entry sets of every microstep
 * from the active state nodes (SCXML's algorithm, for any statechart), builds
 * a new snapshot and state value each time and sends inspection events. Here
 * the sets are worked out once per (active state, transition) pair and kept;
 * a microstep runs the actions and moves one reference. `node
 * bench/machine.mjs` runs the react machine alone both ways: ~90 µs of CPU a
 * recursion under xstate's actor, ~8 under this (docs/performance.md).
 *
 * It runs the part of XState those machines use: compound, atomic and final
 * states; `on`, `always` and `onDone` transitions with one target or none,
 * guarded (inline or named, with params) or not, `reenter`; entry and exit
 * actions, `assign` or the machine's own (inline or named, with params),
 * those of the initial states deferred to the start as an actor defers them;
 * `context` from the input; final states' and the machine's `output`. A
 * machine that declares more is refused when it is compiled
 * (`UnsupportedMachine`) and must run with `createActor`: parallel or history
 * states, `invoke`, `after`, wildcard events, several targets, built-in
 * actions other than `assign` (`raise`, `sendTo`, `spawnChild`, ...),
 * built-in guards (`and`, `stateIn`, ...), actions on an `initial`
 * transition, a final root, `maxIterations`. What compiling cannot see is
 * the machine's own code: actions get a `self` that only sends, no `system`,
 * and `spawn` throws.
 */
export { compileMachine, UnsupportedMachine, type CompiledMachine } from "./compile.js";
export { startMachine, type MachineRun, type MicrostepObserver } from "./run.js";
