/**
 * Programs run under bubblewrap (docs/security.md#sandboxes): the argument
 * vector that runs a program confined, or a clear error where bubblewrap is
 * missing. A sandboxed program is never run unconfined.
 */
import { accessSync, constants, existsSync } from "node:fs";
import { delimiter, join } from "node:path";
import type { Sandbox } from "../config/types.js";
import { RuntimeError } from "../errors.js";

let found: string | null | undefined;

/** bubblewrap's program on PATH, looked for once. */
function bubblewrap(): string | undefined {
  if (found === undefined) {
    found = null;
    for (const dir of (process.env.PATH ?? "").split(delimiter)) {
      const candidate = join(dir, "bwrap");
      try {
        accessSync(candidate, constants.X_OK);
        found = candidate;
        break;
      } catch {
        // not here
      }
    }
  }
  return found ?? undefined;
}

/**
 * `[bwrap, ...options, "--", program, ...args]`: the root read-only, `/dev`
 * and `/proc` of its own, a private `/tmp` (what `argv` names under it kept
 * visible, read-only), `cwd` and `sandbox.writable`
 * writable, every namespace unshared (the network kept only with
 * `network: true`), killed when the runtime dies, its environment exactly
 * `env`. Throws TOOL_FAILED naming the fix where bubblewrap is missing.
 */
export function sandboxedArgv(argv: readonly string[], cwd: string, sandbox: Sandbox, env: Record<string, string>, what: string): string[] {
  const bwrap = bubblewrap();
  if (bwrap === undefined) {
    throw new RuntimeError(
      "TOOL_FAILED",
      `${what} is sandboxed (sandbox:) and bubblewrap is not installed: install it (apt-get install bubblewrap) or remove sandbox:; it never runs unconfined`,
    );
  }
  const options = ["--die-with-parent", "--unshare-all", ...(sandbox.network ? ["--share-net"] : [])];
  options.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp");
  // What the argument vector names (the program's script, a folder it serves) stays visible, read-only,
  // where the private /tmp would hide it; the working folder and `writable` are then bound writable over it.
  for (const path of argv) if (path.startsWith("/tmp/") && existsSync(path)) options.push("--ro-bind", path, path);
  for (const path of [cwd, ...sandbox.writable]) options.push("--bind", path, path);
  options.push("--chdir", cwd, "--clearenv");
  for (const [key, value] of Object.entries(env)) options.push("--setenv", key, value);
  return [bwrap, ...options, "--", ...argv];
}
