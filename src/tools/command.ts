import { spawn } from "node:child_process";
import { resolve as resolvePath } from "node:path";
import type { CommandToolConfig } from "../config/types.js";
import { declaredTool } from "./declared.js";
import { callProcesses } from "./process-tree.js";
import type { Tool } from "./types.js";
import { RuntimeError } from "../errors.js";
import { type Confined, confine } from "./sandbox.js";

/** How much of stderr is kept for error messages. */
const STDERR_KEEP_BYTES = 4096;
const STDERR_LINES = 5;

/**
 * A tool backed by a program: the argument vector is spawned without a shell,
 * the JSON arguments go to stdin, and stdout is the result (JSON, or plain
 * text returned as a string). The process runs in its own process group, and
 * on Linux with a marker in its environment (see process-tree.ts), so that
 * when the call ends (finished, failed, timed out, aborted) everything it
 * started is killed: its group, and descendants that left the group by
 * setsid() too. With `sandbox:`, the program runs under bubblewrap (./sandbox.ts).
 */
export function commandTool(config: CommandToolConfig): Tool {
  return declaredTool(config, async (args, ctx) => {
    const ran = await runProgram({ ...config, what: `command tool "${config.name}"` }, args, ctx.signal);
    if (ran.code !== 0) throw new RuntimeError("TOOL_FAILED", exitMessage(ran.code, ran.signal, ran.stderr, ran.stdout));
    return parseOutput(ran.stdout);
  });
}

/** A program to run: a command tool's, or a command guardrail's (src/guardrails/checks.ts). */
export type ProgramSpec = Pick<CommandToolConfig, "command" | "cwd" | "env" | "timeout_ms" | "max_output_bytes" | "sandbox"> & {
  /** What runs it, for messages: `command tool "x"`. */
  what: string;
};

/** How a program ended: its exit code (null: killed by `signal`), its stdout and the end of its stderr. */
export interface ProgramRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * Run `spec` with `input` as JSON on stdin. Rejects when it cannot start,
 * times out, writes past its cap or is aborted; else resolves with how it ended.
 */
export async function runProgram(spec: ProgramSpec, input: unknown, signal: AbortSignal): Promise<ProgramRun> {
  const config = spec;
  const [program, ...rest] = config.command;
  if (program === undefined) throw new RuntimeError("CONFIG_INVALID", `${spec.what} has an empty command`);
  if (signal.aborted) throw new RuntimeError("ABORTED", "aborted");
  const executable = program.startsWith(".") ? resolvePath(config.cwd, program) : program;
  const env: Record<string, string> = {};
  if (process.env.PATH !== undefined) env.PATH = process.env.PATH;
  if (process.env.HOME !== undefined) env.HOME = process.env.HOME;
  Object.assign(env, config.env);
  // After config.env: a tool's configuration cannot take the marker away.
  const processes = callProcesses();
  Object.assign(env, processes.env);

  const argv = [executable, ...rest];
  const how: Confined = config.sandbox ? await confine(argv, config.cwd, config.sandbox, env, spec.what) : { argv };
  if (signal.aborted) throw new RuntimeError("ABORTED", "aborted");

  return new Promise<ProgramRun>((resolve, reject) => {
    const child = spawn(how.argv[0]!, how.argv.slice(1), {
      shell: false,
      detached: true,
      cwd: config.cwd,
      env,
      stdio: ["pipe", "pipe", "pipe"],
      ...how.user,
    });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = Buffer.alloc(0);
    let failure: Error | undefined;

    const killTree = (): void => processes.kill(child.pid);
    const fail = (err: Error): void => {
      failure ??= err;
      killTree();
    };
    const onAbort = (): void => fail(new RuntimeError("ABORTED", "aborted"));
    const timer = setTimeout(() => fail(new RuntimeError("TOOL_TIMEOUT", `timed out after ${config.timeout_ms} ms`)), config.timeout_ms);
    signal.addEventListener("abort", onAbort, { once: true });

    child.stdout.on("data", (chunk: Buffer) => {
      if (failure) return;
      stdoutBytes += chunk.length;
      if (stdoutBytes > config.max_output_bytes) {
        fail(new RuntimeError("TOOL_FAILED", `output exceeded ${config.max_output_bytes} bytes; the command was stopped`));
        child.stdout.destroy();
        return;
      }
      stdout.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      stderr = Buffer.concat([stderr, chunk]);
      if (stderr.length > STDERR_KEEP_BYTES) stderr = stderr.subarray(stderr.length - STDERR_KEEP_BYTES);
    });
    // A program that never reads stdin closes it early; that is not an error.
    child.stdin.on("error", () => undefined);
    child.stdin.end(JSON.stringify(input));

    // Whatever the program left running dies with it; otherwise a background
    // grandchild holding stdout open would keep the call waiting.
    child.on("exit", killTree);
    const cleanUp = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    };
    child.on("error", (err) => {
      cleanUp();
      reject(failure ?? new RuntimeError("TOOL_FAILED", `cannot start ${JSON.stringify(program)}: ${err.message}`));
    });
    child.on("close", (code, sig) => {
      cleanUp();
      if (failure) return reject(failure);
      resolve({ code, signal: sig, stdout: Buffer.concat(stdout).toString("utf8"), stderr: stderr.toString("utf8") });
    });
  });
}

function exitMessage(code: number | null, sig: NodeJS.Signals | null, stderr: string, stdout: string): string {
  const how = code !== null ? `exited with code ${code}` : `was killed by ${sig ?? "a signal"}`;
  const detail = lastLines(stderr) || lastLines(stdout);
  return detail ? `command ${how}: ${detail}` : `command ${how}`;
}

function lastLines(text: string): string {
  const lines = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
  return lines.slice(-STDERR_LINES).join(" | ").slice(0, 1000);
}

function parseOutput(text: string): unknown {
  const trimmed = text.trim();
  if (trimmed === "") return null;
  try {
    return JSON.parse(trimmed) as unknown;
  } catch {
    return trimmed;
  }
}
