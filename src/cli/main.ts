import { Command, CommanderError } from "commander";
import { describeError } from "../errors.js";
import { registerApprove, registerResume } from "./commands/resume.js";
import { registerDiff, registerReplay } from "./commands/replay.js";
import { registerExec } from "./commands/exec.js";
import { registerGraph } from "./commands/graph.js";
import { registerInit } from "./commands/init.js";
import { registerMcp } from "./commands/mcp.js";
import { registerPlan } from "./commands/plan.js";
import { registerSchema } from "./commands/schema.js";
import { registerServe } from "./commands/serve.js";
import { registerTest } from "./commands/test.js";
import { registerTools } from "./commands/tools.js";
import { registerTrace } from "./commands/trace.js";
import { registerValidate } from "./commands/validate.js";
import { registerWorker } from "./commands/worker.js";
import { EXIT } from "./exit.js";

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

  registerValidate(program, setExit);
  registerSchema(program, setExit);
  registerTrace(program, setExit);
  registerExec(program, setExit);
  registerResume(program, setExit);
  registerApprove(program, setExit);
  registerReplay(program, setExit);
  registerDiff(program, setExit);
  registerGraph(program, setExit);
  registerPlan(program, setExit);
  registerServe(program, setExit);
  registerWorker(program, setExit);
  registerTools(program, setExit);
  registerMcp(program, setExit);
  registerInit(program, setExit);
  registerTest(program, setExit);

  try {
    await program.parseAsync(argv);
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end with exit code 0; usage mistakes with 2.
      return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
    }
    process.stderr.write(`runtime: ${describeError(err)}\n`);
    return EXIT.RUN_ERROR;
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
