#!/usr/bin/env node
/**
 * Part of `npm run build`, after tsc: writes what `runtime --help` prints to
 * dist/cli/help.txt, from the real command line (bin/runtime.js, which prints
 * this file for a bare `--help` instead of loading every command module:
 * `runtime --help` starts in about the time of `node -e 0`).
 */
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const bin = fileURLToPath(new URL("../bin/runtime.js", import.meta.url));
const help = execFileSync(process.execPath, [bin, "--help"], { env: { ...process.env, RUNTIME_LIVE_HELP: "1", COLUMNS: "80" }, encoding: "utf8" });
writeFileSync(fileURLToPath(new URL("../dist/cli/help.txt", import.meta.url)), help);
