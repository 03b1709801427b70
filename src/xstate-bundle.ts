/**
 * xstate's functions, from the one file the build bundles the package into
 * (dist/vendor/xstate.cjs, scripts/bundle-vendor.mjs) and compiled with the
 * code cache the build took after running a machine: ~15-20 ms less for the
 * first run of a process than importing the package, which Node also scans
 * for its exports (docs/performance.md). From the sources, the package
 * itself. The machines and runners import xstate's values from here, its
 * types from "xstate"; the kinds load lazily, so this loads with the first
 * kind that runs (docs/design/engine.md#start-up).
 */
import { lazilyBundled } from "./built.js";

const xstate = lazilyBundled<typeof import("xstate")>("xstate")();

export const { assign, createActor, createMachine, fromPromise, setup, toPromise, transition } = xstate;
