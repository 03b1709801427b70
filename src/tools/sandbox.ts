/**
 * Programs run under bubblewrap (docs/security.md#sandboxes): how to spawn a
 * program confined, or a clear error where it cannot be confined. A sandboxed
 * program is never run unconfined, and never as host root: when the runtime
 * is root, bubblewrap itself is started as an unprivileged user, so the
 * program's user namespace maps to that user and holds no capability on the
 * host (a namespace made by root maps its root to host root, whose files and
 * /proc/sys entries it may write).
 */
import { execFile } from "node:child_process";
import { accessSync, constants, lstatSync, readdirSync, readFileSync, readlinkSync, realpathSync, statSync } from "node:fs";
import { delimiter, dirname, join, sep } from "node:path";
import type { Sandbox } from "../config/types.js";
import { RuntimeError } from "../errors.js";

/** The user and group a sandboxed program runs as when the runtime runs as root: `nobody`. */
export const SANDBOX_USER = { uid: 65534, gid: 65534 } as const;
/** The fresh scratch folder, the private `/tmp`: its size cap. */
export const SCRATCH_BYTES = 64 * 1024 * 1024;
/** The private `/dev/shm`: its size cap. */
const SHM_BYTES = 8 * 1024 * 1024;
/** Host folders where services keep their unix sockets: replaced by empty, read-only ones. */
const SOCKET_FOLDERS = ["/run", "/var/run", "/var/tmp"];

/** How to spawn a sandboxed program: its argument vector (bubblewrap's), and the user to start it as. */
export interface Confined {
  argv: string[];
  /** Set when the runtime is root: spawn as this uid and gid (libuv also drops the supplementary groups). */
  user?: { uid: number; gid: number };
}

/**
 * `argv` confined: bubblewrap with every namespace unshared (the network kept
 * only with `network: true`) and no further user namespace, every capability
 * dropped, a new session, killed when the runtime dies; the root read-only,
 * `/proc/sys` read-only, `/dev` read-only but for a size-capped `/dev/shm`;
 * a fresh, size-capped `/tmp` as its scratch folder, gone after the call;
 * `/run`, `/var/run` and `/var/tmp` empty and read-only (no host unix
 * socket); `cwd` (read-only) and what `argv` names kept visible over them;
 * `sandbox.writable` writable; the folder of every database the runtime has
 * open hidden; its environment exactly `env`. Throws TOOL_FAILED naming the
 * fix where bubblewrap is missing or cannot confine a program here.
 */
export async function confine(argv: readonly string[], cwd: string, sandbox: Sandbox, env: Record<string, string>, what: string): Promise<Confined> {
  const bwrap = bubblewrap(what);
  const user = unprivilegedUser(what);
  const base = baseOptions(sandbox.network);
  await confinementWorks(bwrap, base, user, what);
  const options = [
    ...base,
    ...keptVisible([cwd, ...argv], sandbox.network),
    ...writableOptions(sandbox.writable, user, what),
    ...hiddenOptions(databaseFolders()),
    "--chdir",
    cwd,
    "--clearenv",
  ];
  for (const [key, value] of Object.entries(env)) options.push("--setenv", key, value);
  return { argv: [bwrap, ...options, "--", ...argv], ...(user ? { user } : {}) };
}

let found: string | null | undefined;

/** bubblewrap's program on PATH, looked for once. */
function bubblewrap(what: string): string {
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
  if (found === null) {
    throw new RuntimeError(
      "TOOL_FAILED",
      `${what} is sandboxed (sandbox:) and bubblewrap is not installed: install it (apt-get install bubblewrap) or remove sandbox:; it never runs unconfined`,
    );
  }
  return found;
}

/** Undefined when the runtime is not root; else SANDBOX_USER, once this user namespace is seen to have it. */
function unprivilegedUser(what: string): Confined["user"] {
  if (process.getuid?.() !== 0) return undefined;
  const mapped = (file: string, id: number): boolean =>
    readFileSync(file, "utf8")
      .split("\n")
      .some((line) => {
        const [inside, , count] = line.trim().split(/\s+/).map(Number);
        return inside !== undefined && count !== undefined && id >= inside && id < inside + count;
      });
  if (!mapped("/proc/self/uid_map", SANDBOX_USER.uid) || !mapped("/proc/self/gid_map", SANDBOX_USER.gid)) {
    throw new RuntimeError(
      "TOOL_FAILED",
      `${what} is sandboxed (sandbox:) and the runtime runs as root in a user namespace without uid and gid ${SANDBOX_USER.uid}, the unprivileged user sandboxed programs run as: ` +
        "run the runtime as an unprivileged user, or give the namespace that id, or remove sandbox:; it never runs unconfined",
    );
  }
  return { ...SANDBOX_USER };
}

/** What every sandbox is: namespaces, capabilities, session, and the read-only root with private /dev, /proc, /tmp and socket folders. */
function baseOptions(network: boolean): string[] {
  const options = ["--die-with-parent", "--new-session", "--unshare-all", "--unshare-user", "--disable-userns", "--cap-drop", "ALL"];
  if (network) options.push("--share-net");
  options.push("--ro-bind", "/", "/");
  options.push("--dev", "/dev", "--size", String(SHM_BYTES), "--tmpfs", "/dev/shm", "--remount-ro", "/dev");
  options.push("--proc", "/proc", "--ro-bind", "/proc/sys", "/proc/sys");
  options.push("--size", String(SCRATCH_BYTES), "--tmpfs", "/tmp");
  for (const folder of SOCKET_FOLDERS.filter(isRealFolder)) options.push("--size", "4096", "--tmpfs", folder, "--remount-ro", folder);
  return options;
}

/** The private places: what is there on the host is not seen inside. */
const PRIVATE = ["/tmp", "/dev/shm", ...SOCKET_FOLDERS];

function isPrivate(path: string): boolean {
  return PRIVATE.some((folder) => path === folder || path.startsWith(folder + sep));
}

/**
 * The working folder and the paths `argv` names (a script, a folder it serves)
 * that lie in a private place, bound read-only over it; with the network, the
 * resolver's configuration where /etc/resolv.conf links into /run.
 */
function keptVisible(paths: readonly string[], network: boolean): string[] {
  const wanted = paths.filter((path) => path.startsWith("/") && isPrivate(path) && exists(path));
  if (network) {
    const resolver = realPath("/etc/resolv.conf");
    if (resolver !== undefined && isPrivate(resolver)) wanted.push(resolver);
  }
  return wanted.flatMap((path) => ["--ro-bind", path, path]);
}

/** `writable` bound writable; as root, each must be writable by SANDBOX_USER, who writes there. */
function writableOptions(paths: readonly string[], user: Confined["user"], what: string): string[] {
  if (user) {
    const refused = paths.filter((path) => exists(path) && !writableBy(path, user));
    if (refused.length > 0) {
      throw new RuntimeError(
        "TOOL_FAILED",
        `${what} is sandboxed with writable: ${refused.join(", ")}, which uid ${user.uid} may not write: the runtime runs as root, so sandboxed programs run as that unprivileged user. ` +
          `Give it the folder (chown ${user.uid}:${user.gid} ${refused[0]}) or run the runtime as an unprivileged user`,
      );
    }
  }
  return paths.flatMap((path) => ["--bind", path, path]);
}

function writableBy(path: string, user: { uid: number; gid: number }): boolean {
  const { mode, uid, gid } = statSync(path);
  return (uid === user.uid && (mode & 0o200) !== 0) || (gid === user.gid && (mode & 0o020) !== 0) || (mode & 0o002) !== 0;
}

/** Each folder replaced by an empty, read-only one. */
function hiddenOptions(folders: readonly string[]): string[] {
  return folders.flatMap((folder) => ["--size", "4096", "--tmpfs", folder, "--remount-ro", folder]);
}

/**
 * The folders of the SQLite databases this process has open (the trace store,
 * sessions, plans: `.runtime`, RUNTIME_TRACE_DIR, --trace-dir), read from
 * /proc/self/fd: the store's folder is never visible to a sandboxed program,
 * wherever it was put.
 */
function databaseFolders(): string[] {
  const folders = new Set<string>();
  let fds: string[];
  try {
    fds = readdirSync("/proc/self/fd");
  } catch {
    return [];
  }
  for (const fd of fds) {
    let target: string;
    try {
      target = readlinkSync(join("/proc/self/fd", fd));
    } catch {
      continue; // closed meanwhile
    }
    if (/\.db(-wal|-shm|-journal)?$/.test(target) && target.startsWith("/")) folders.add(dirname(target));
  }
  return [...folders].filter(isRealFolder);
}

/**
 * Whether bubblewrap confines a program here as `user` with `options`, asked
 * once per process by running `true` in such a sandbox: where it cannot (no
 * unprivileged user namespaces, a bubblewrap too old for these options), the
 * call fails saying why, and the program never starts.
 */
let verdict: Promise<string | undefined> | undefined;

async function confinementWorks(bwrap: string, options: readonly string[], user: Confined["user"], what: string): Promise<void> {
  verdict ??= new Promise((resolve) => {
    execFile(bwrap, [...options, "--", "true"], { ...user, timeout: 30_000 }, (err, _stdout, stderr) => {
      resolve(err ? stderr.trim().split("\n")[0] || err.message : undefined);
    });
  });
  const why = await verdict;
  if (why !== undefined) {
    throw new RuntimeError(
      "TOOL_FAILED",
      `${what} is sandboxed (sandbox:) and bubblewrap cannot confine a program here as ${user ? `uid ${user.uid}` : "this user"} (${why}): ` +
        "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or the container's seccomp and AppArmor profiles) and use bubblewrap 0.8 or later, or remove sandbox:; it never runs unconfined",
    );
  }
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** A folder itself, not a link to one (bubblewrap mounts over the folder, and a link's target is covered where it lies). */
function isRealFolder(path: string): boolean {
  try {
    return lstatSync(path).isDirectory();
  } catch {
    return false;
  }
}

function realPath(path: string): string | undefined {
  try {
    return realpathSync(path);
  } catch {
    return undefined;
  }
}
