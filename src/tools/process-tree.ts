import { randomUUID } from "node:crypto";
import { closeSync, openSync, readdirSync, readSync, statSync } from "node:fs";

/**
 * Nothing a command tool starts may outlive its call: not its process, not
 * its process group, and not the rest of its process tree.
 *
 * Killing the process group is not enough. A descendant that calls setsid()
 * (the `setsid` program, a daemon, node's `spawn(..., { detached: true })`)
 * leaves the group, and once its parent exits it is re-parented to init or a
 * subreaper, so neither the group kill nor a walk of parent pids finds it.
 *
 * What does follow it is the environment: every call gets a variable of its
 * own, RUNTIME_TOOL_CALL=<random uuid>, that its descendants inherit. When the
 * call ends, the group is killed as before and so is every process of ours
 * whose /proc/<pid>/environ holds that exact entry; a second sweep shortly
 * after catches what was being forked during the first.
 *
 * Limits, said plainly: a descendant that scrubs its environment before exec
 * (`env -i`, an execve with a fresh environment) loses the marker and escapes;
 * so does one that forks faster than two sweeps can follow, or one running
 * under another user that we may not signal. Between reading a process's
 * environment and killing it, its pid could in principle be reused; the window
 * is a few microseconds. This is Linux-only (it needs /proc); elsewhere a call
 * gets no marker and only its process group is killed, as before.
 */

/** The environment variable carrying a call's marker. */
export const CALL_MARKER_VAR = "RUNTIME_TOOL_CALL";

/** How long after the first sweep the second one runs. */
export const SECOND_SWEEP_MS = 50;

const SWEEPS_PROC = process.platform === "linux";

/** The processes of one command-tool call. */
export interface CallProcesses {
  /** Entries to add to the program's environment (none where there is no sweep). */
  readonly env: Readonly<Record<string, string>>;
  /**
   * Kill the process group `pgid` and every process carrying this call's
   * marker, now and once more SECOND_SWEEP_MS later. Safe to call repeatedly.
   */
  kill(pgid: number | undefined): void;
}

/** A fresh marker for one call; kill() ends everything it started. */
export function callProcesses(): CallProcesses {
  if (!SWEEPS_PROC) return { env: {}, kill: killGroup };
  const value = randomUUID();
  const entry = `${CALL_MARKER_VAR}=${value}`;
  let followUp: NodeJS.Timeout | undefined;
  return {
    env: { [CALL_MARKER_VAR]: value },
    kill(pgid) {
      killGroup(pgid);
      killMarked(entry);
      // Deliberately not unref'd: a process left to the second sweep must not
      // survive because the runtime was about to exit.
      clearTimeout(followUp);
      followUp = setTimeout(() => killMarked(entry), SECOND_SWEEP_MS);
    },
  };
}

function killGroup(pgid: number | undefined): void {
  if (pgid === undefined) return;
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // The group is already gone.
  }
}

/**
 * SIGKILL every process (other than this one) whose environment holds `entry`
 * exactly, as a whole NUL-separated item, and that runs under our uid (any uid
 * when we are root). Unreadable or vanished processes are skipped. Returns the
 * pids it signalled. Synchronous on purpose: the first sweep should be done
 * before anything marked can fork much further. It costs about 20 µs a
 * process (measured: median 1 ms with 75 processes, 9 ms with 375, 21 ms with
 * 1,070), and runs at least twice a call.
 */
export function killMarked(entry: string): number[] {
  if (!SWEEPS_PROC) return [];
  const needle = Buffer.from(entry);
  const uid = process.getuid?.();
  const killed: number[] = [];
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return killed;
  }
  for (const name of names) {
    const code = name.charCodeAt(0);
    if (code < 48 || code > 57) continue; // not a pid
    const pid = Number(name);
    if (pid === process.pid) continue;
    let environ: Buffer;
    try {
      environ = readEnviron(`/proc/${name}/environ`);
    } catch {
      continue; // another user's process, a kernel thread, or already gone
    }
    if (!hasEntry(environ, needle)) continue;
    try {
      if (uid !== undefined && uid !== 0 && statSync(`/proc/${name}`).uid !== uid) continue;
      process.kill(pid, "SIGKILL");
      killed.push(pid);
    } catch {
      // Gone in the meantime.
    }
  }
  return killed;
}

/** Reused between reads; grown when an environment does not fit. */
let scratch = Buffer.alloc(64 * 1024);

/**
 * The whole file, in a view of `scratch` valid until the next call. /proc files
 * report size 0, so read until EOF; one buffer for the sweep is cheaper than
 * readFileSync's allocation per process.
 */
function readEnviron(path: string): Buffer {
  const fd = openSync(path, "r");
  try {
    let length = 0;
    for (;;) {
      if (length === scratch.length) {
        const bigger = Buffer.alloc(scratch.length * 2);
        scratch.copy(bigger);
        scratch = bigger;
      }
      const read = readSync(fd, scratch, length, scratch.length - length, null);
      if (read === 0) return scratch.subarray(0, length);
      length += read;
    }
  } finally {
    closeSync(fd);
  }
}

/** True when `environ` (NUL-separated KEY=value items) contains `needle` as a whole item. */
function hasEntry(environ: Buffer, needle: Buffer): boolean {
  for (let at = environ.indexOf(needle); at !== -1; at = environ.indexOf(needle, at + 1)) {
    const end = at + needle.length;
    if ((at === 0 || environ[at - 1] === 0) && (end === environ.length || environ[end] === 0)) return true;
  }
  return false;
}
