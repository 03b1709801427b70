import { Command, CommanderError } from "commander";
import { codeOf, describeError } from "../errors.js";
import { EXIT, exitStatusOf, type SetExit } from "./exit.js";

type Register = (program: InstanceType<typeof Command>, setExit: SetExit) => void;

/**
 * Every command, in the order `runtime --help` lists them, and its module.
 * A command line that names one loads only its module: the sixteen modules
 * and their imports, and commander building all of them, were ~20-25 ms of
 * every `runtime exec` (docs/performance.md). Anything else (`--help`,
 * `--version`, `help`, a mistyped name) registers them all.
 */
const COMMANDS: Record<string, () => Promise<Register>> = {
  validate: async () => (await import("./commands/validate.js")).registerValidate,
  schema: async () => (await import("./commands/schema.js")).registerSchema,
  trace: async () => (await import("./commands/trace.js")).registerTrace,
  exec: async () => (await import("./commands/exec.js")).registerExec,
  resume: async () => (await import("./commands/resume.js")).registerResume,
  approve: async () => (await import("./commands/resume.js")).registerApprove,
  replay: async () => (await import("./commands/replay.js")).registerReplay,
  diff: async () => (await import("./commands/replay.js")).registerDiff,
  graph: async () => (await import("./commands/graph.js")).registerGraph,
  plan: async () => (await import("./commands/plan.js")).registerPlan,
  serve: async () => (await import("./commands/serve.js")).registerServe,
  worker: async () => (await import("./commands/worker.js")).registerWorker,
  tools: async () => (await import("./commands/tools.js")).registerTools,
  mcp: async () => (await import("./commands/mcp.js")).registerMcp,
  init: async () => (await import("./commands/init.js")).registerInit,
  test: async () => (await import("./commands/test.js")).registerTest,
};

/**
 * Run the CLI and resolve to its exit status. Commands set the status through
 * the `setExit` they are given; nothing here calls process.exit, so pending
 * writes (traces, stdout) are flushed by Node's normal shutdown.
 */
export async function main(argv: string[]): Promise<number> {
  let status: number = EXIT.OK;
  const setExit = (code: number) => {
    status = code;
  };
  // A reader that went away (`runtime exec ... | head -1`) is not a crash: later writes
  // are dropped, and a run goes on to its end so that its trace is complete.
  process.stdout.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE" || err.code === "ERR_STREAM_DESTROYED") return;
    process.stderr.write(`runtime: cannot write to stdout: ${describeError(err)}\n`);
    status = EXIT.RUN_ERROR;
  });
  // Nowhere left to report a failing stderr to; the exit status still tells.
  process.stderr.on("error", () => {});
  const program = new Command()
    .name("runtime")
    .description("A declarative, YAML-driven LLM agent runtime.")
    .version(await packageVersion(), "-V, --version")
    .showHelpAfterError()
    .addHelpText(
      "after",
      "\nExit status: 0 success; 1 the run ended in error, or nothing found (trace, plan);\n" +
        "2 bad usage or an invalid team file; 3 paused for an approval (runtime approve, then runtime resume);\n" +
        "130 interrupted (the trace is kept; runtime resume continues it).\n" +
        "Run `runtime <command> --help` for a command's options; `runtime schema --markdown` for the team file reference.",
    )
    .exitOverride();

  const named = argv[2];
  const names = named !== undefined && Object.hasOwn(COMMANDS, named) ? [named] : Object.keys(COMMANDS);
  for (const register of await Promise.all(names.map((name) => COMMANDS[name]!()))) register(program, setExit);

  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end with exit code 0; usage mistakes with 2.
      return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    process.stderr.write(`runtime: ${describeError(err)}\n`);
    return exitStatusOf(codeOf(err));
  }
  return status;
}

async function packageVersion(): Promise<string> {
  const { readFile } = await import("node:fs/promises");
  const pkg = JSON.parse(await readFile(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  return pkg.version;
}
