import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: "forks",
    // Most of a test file's time is spent waiting on what it spawned (CLI processes, servers, PostgreSQL,
    // tmux, Chromium), so two files at a time even on two cores (vitest's default is one fewer than the
    // cores): the whole suite 436-445 s instead of about 680 s on the 2-core CI machine (docs/testing.md#running-the-suite).
    maxWorkers: Math.max(2, availableParallelism() - 1),
  },
});
