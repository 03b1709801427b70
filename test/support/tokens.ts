/**
 * Helpers of the per-caller token tests (test/server/tokens*.test.ts): a
 * tokens file written from callers and their tokens (as their SHA-256, the
 * way an operator writes one), and a spawned `runtime serve` whose every
 * line of output is kept, to be searched for tokens.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { BIN, ROOT } from "./cli.js";
import { tempDir } from "./team.js";

/** A caller of a tokens file; `token` is written as its `token_sha256`. */
export interface TestCaller {
  name: string;
  token?: string;
  token_env?: string;
  scopes: string[];
  runs_max?: number;
  rate?: number;
}

/** Write a tokens file (YAML) of `callers`; its path. */
export function tokensFile(callers: readonly TestCaller[]): string {
  const file = join(tempDir("tokens-"), "tokens.yaml");
  const lines = callers.map(({ token, ...rest }) => {
    const entry = { ...rest, ...(token !== undefined ? { token_sha256: createHash("sha256").update(token).digest("hex") } : {}) };
    return `- ${JSON.stringify(entry)}`;
  });
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}

export interface Spawned {
  url: string;
  child: ChildProcess;
  /** Everything it wrote so far, stdout and stderr. */
  output(): string;
  /** Stop it (SIGTERM) and wait for it to exit. */
  stop(): Promise<void>;
}

/** Spawn `runtime serve ARGS --port 0` with `env` added, and resolve once it listens. */
export async function spawnServe(args: string[], env: Record<string, string> = {}): Promise<Spawned> {
  return spawnRuntime(["serve", ...args, "--port", "0"], env, /listening on (https?:\/\/[^/\s]+)\//);
}

/** Spawn `runtime ARGS` with `env` added, and resolve once its output matches `ready` (its first group: the URL, if any). */
export async function spawnRuntime(args: string[], env: Record<string, string>, ready: RegExp): Promise<Spawned> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: "1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const exited = new Promise<void>((resolve) => child.on("close", () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`not ready within 30 s; output: ${output}`)), 30_000);
    const read = (d: Buffer) => {
      output += d.toString();
      const m = ready.exec(output);
      if (m) {
        clearTimeout(timer);
        resolve(m[1] ?? "");
      }
    };
    child.stdout.on("data", read);
    child.stderr.on("data", read);
    child.on("close", (code) => reject(new Error(`runtime ${args[0]} exited (${code}) before it was ready: ${output}`)));
  });
  return {
    url,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
    },
  };
}
