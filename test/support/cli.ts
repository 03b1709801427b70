import { spawn, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";

export const BIN = fileURLToPath(new URL("../../bin/runtime.js", import.meta.url));
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Spawn the built CLI (`npm run build` first) and collect its output. */
export function runCli(
  args: string[],
  options: { cwd?: string; env?: Record<string, string | undefined>; stdin?: string; timeoutMs?: number } = {},
): Promise<CliResult> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? ROOT,
      env: { ...process.env, NO_COLOR: "1", ...options.env },
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 20_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
    child.stdin.end(options.stdin ?? "");
  });
}

/** A spawned CLI command that runs until stopped (`runtime serve`, `worker`, `mcp --http`). */
export interface Spawned {
  child: ChildProcess;
  /** The first group of what its output matched when it was ready (a URL), or "". */
  url: string;
  /** What its output matched when it was ready. */
  ready: RegExpExecArray;
  /** Everything it wrote so far, stdout and stderr. */
  output(): string;
  /** Its exit status once it exits (null: ended by a signal). */
  exited: Promise<number | null>;
  /** Stop it (SIGTERM) and wait for it to exit. */
  stop(): Promise<void>;
}

/** Spawn `runtime ARGS` (the built CLI) with `env` added (a key set to undefined is unset), and resolve once its output matches `ready`. */
export async function spawnRuntime(args: string[], env: Record<string, string | undefined>, ready: RegExp): Promise<Spawned> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  const match = await new Promise<RegExpExecArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready within 30 s; output: ${output}`)), 30_000);
    const read = (d: Buffer) => {
      output += d.toString();
      const m = ready.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.on("close", (code) => reject(new Error(`runtime ${args[0]} exited (${code}) before it was ready: ${output}`)));
  });
  return {
    child,
    url: match[1] ?? "",
    ready: match,
    output: () => output,
    exited,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
