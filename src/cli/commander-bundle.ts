/**
 * commander's classes, from the one file the build bundles the package into
 * (dist/vendor/commander.cjs, scripts/bundle-vendor.mjs), compiled with the
 * code cache the build took after parsing a command line: 5-8 ms instead of
 * 14-23 ms for every command but a bare --help (docs/performance.md). From
 * the sources, the package itself.
 */
import { lazilyBundled } from "../built.js";

export const { Command, CommanderError } = lazilyBundled<typeof import("commander")>("commander")();
