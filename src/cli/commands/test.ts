import { existsSync, statSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Command } from "commander";
import { ConfigError, describeError, formatProblem } from "../../errors.js";
import type { CaseResult } from "../../testing/runner.js";
import { EXIT, type SetExit } from "../exit.js";

interface TestOptions {
  junit?: string;
  record?: boolean;
  timeout?: string;
  repeat?: string;
  models?: string;
}

/** `runtime test [PATH...]`: run agent test files (docs/testing.md) like a test runner. */
export function registerTest(program: Command, setExit: SetExit): void {
  program
    .command("test")
    .description(
      "run agent tests (*.test.yaml, docs/testing.md) offline on scripted replies; exit 0 all pass, 1 any failure, 2 bad usage or an invalid test file",
    )
    .argument("[paths...]", "test files or folders (default: every *.test.yaml under the working directory, node_modules skipped)")
    .option("--junit <file>", "also write the results as JUnit XML")
    .option("--record", "run the cases that have a recording on the team's models as configured (live) and rewrite their recordings")
    .option("--timeout <ms>", "stop and fail a case that runs longer (default 120000)")
    .option("--repeat <n>", "run each case N times on the team's live models (judges asked live); a case passes when its pass_rate (default 1) of the runs do")
    .option("--models <names>", "run the suite once per model of the team (comma-separated; live), every agent on that model, and print a case × model table")
    .action(async (paths: string[], opts: TestOptions) => {
      setExit(await test(paths, opts));
    });
}

async function test(paths: string[], opts: TestOptions): Promise<number> {
  const started = performance.now();
  const fail = (message: string) => {
    process.stderr.write(`runtime test: ${message}\n`);
    return EXIT.USAGE;
  };
  const timeout = opts.timeout === undefined ? undefined : Number(opts.timeout);
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0))
    return fail(`--timeout must be a positive whole number of milliseconds, not '${opts.timeout}'`);
  const repeat = opts.repeat === undefined ? 1 : Number(opts.repeat);
  if (!(Number.isInteger(repeat) && repeat > 0 && repeat <= 1000)) return fail(`--repeat must be a whole number from 1 to 1000, not '${opts.repeat}'`);
  const models = opts.models === undefined ? undefined : opts.models.split(",").map((m) => m.trim());
  if (models !== undefined && (models.length === 0 || models.some((m) => m === "")))
    return fail("--models takes model names of the team file, separated by commas");
  if (opts.record && (opts.repeat !== undefined || models !== undefined))
    return fail("--record rewrites recordings from one live run: use it without --repeat and --models");
  const live = opts.repeat !== undefined || models !== undefined;
  if (opts.junit) {
    const parent = dirname(resolve(opts.junit));
    if (!existsSync(parent) || !statSync(parent).isDirectory()) return fail(`cannot write --junit ${opts.junit}: directory ${parent} does not exist`);
  }
  // The runner (and with it the engine) is loaded only when this command runs.
  const [{ findTestFiles }, { prepareTestFiles, runTests }, { format }] = await Promise.all([
    import("../../testing/discover.js"),
    import("../../testing/runner.js"),
    import("../../testing/expectations.js"),
  ]);
  let files: string[];
  try {
    files = await findTestFiles(paths);
  } catch (err) {
    return fail(describeError(err));
  }
  if (files.length === 0) return fail(`no test files (*.test.yaml) under ${paths.length > 0 ? paths.join(", ") : "the working directory"}`);

  let prepared: Awaited<ReturnType<typeof prepareTestFiles>>;
  try {
    prepared = await prepareTestFiles(files, { record: opts.record === true || live });
  } catch (err) {
    if (!(err instanceof ConfigError)) return fail(describeError(err));
    process.stderr.write(err.problems.map((p) => `${formatProblem(p)}\n`).join(""));
    return EXIT.USAGE;
  }

  let current: string | undefined;
  const show = (r: CaseResult) => {
    if (r.file !== current) {
      current = r.file;
      process.stdout.write(`${r.file}\n`);
    }
    const runs = r.runs > 1 ? `${r.passes}/${r.runs} passed, ` : "";
    const on = r.model !== undefined ? ` [${r.model}]` : "";
    process.stdout.write(`  ${r.passed ? "✓" : "✗"} ${r.name}${on} (${runs}${r.ms} ms)${r.recorded ? ` — recorded ${r.recorded}` : ""}\n`);
    for (const d of r.differences) process.stdout.write(`      ${format(d)}\n`);
  };
  for (const model of models ?? []) {
    const without = prepared.filter((p) => !p.team.models[model]).map((p) => p.test.team);
    if (without.length > 0) return fail(`--models: no model '${model}' in ${[...new Set(without)].join(", ")}`);
  }
  const common = { record: opts.record === true, live, repeat, onCase: show, ...(timeout !== undefined ? { caseTimeoutMs: timeout } : {}) };
  const results = [];
  for (const model of models ?? [undefined]) results.push(...(await runTests(prepared, { ...common, ...(model !== undefined ? { model } : {}) })));
  if (models) {
    const { modelTable } = await import("../../testing/model-table.js");
    process.stdout.write(`\n${modelTable(results, models)}`);
  }
  const ms = Math.round(performance.now() - started);
  const failed = results.filter((r) => !r.passed);
  if (failed.length > 0) {
    process.stdout.write(`\nFailed:\n${failed.map((r) => `  ${r.file}:${r.line} ${r.name}\n`).join("")}`);
  }
  process.stdout.write(`\n${results.length - failed.length} passed, ${failed.length} failed (${ms} ms)\n`);
  if (opts.junit) {
    const { junitXml } = await import("../../testing/junit.js");
    try {
      writeFileSync(opts.junit, junitXml(results, ms), "utf8");
    } catch (err) {
      process.stderr.write(`runtime test: cannot write ${opts.junit}: ${describeError(err)}\n`);
      return EXIT.RUN_ERROR;
    }
  }
  return failed.length > 0 ? EXIT.RUN_ERROR : EXIT.OK;
}
