#!/usr/bin/env node
// Nothing left to do: the build bundled yaml, xstate and commander here with V8 code caches, which are gone
// (packages load as installed; bin/runtime.js turns on Node's own compile cache where Node has it).
// This file stays only while package.json's "build" script still calls it; delete both together.
