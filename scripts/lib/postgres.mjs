/**
 * A real PostgreSQL for the tests and the benchmarks (test/support/postgres.ts
 * and bench/scale-out.mjs import it; plain JS so node runs it without a TS
 * loader): `initdb` into a temporary directory, a server on a free loopback
 * port (and a socket in the same directory), one
 * fresh database per call of `createDatabase`. Stopped with `pg_ctl stop`.
 * As root (CI), the cluster runs as the `postgres` user the package creates.
 * A machine without PostgreSQL fails here naming what is missing: `scripts/test.sh`
 * installs the `postgresql` package.
 */
import { execFile, execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";

function binDir() {
  const found = spawnSync("sh", ["-c", "command -v initdb"], { encoding: "utf8" }).stdout.trim();
  if (found) return found.replace(/\/initdb$/, "");
  const root = "/usr/lib/postgresql";
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(join(root, v, "bin", "initdb"))) return join(root, v, "bin");
  throw new Error("PostgreSQL is not installed (no initdb on PATH or in /usr/lib/postgresql/*/bin): install the postgresql package (scripts/test.sh does)");
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

/** @returns {Promise<import("./postgres.d.mts").TestPostgres>} */
export async function startPostgres({ settings = {} } = {}) {
  const bin = binDir();
  const dir = mkdtempSync(join(tmpdir(), "runtime-pg-"));
  const data = join(dir, "data");
  const asRoot = process.getuid?.() === 0;
  let uid = -1;
  let gid = -1;
  if (asRoot) {
    const id = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    if (id.status !== 0) throw new Error("running as root, PostgreSQL needs the 'postgres' user: install the postgresql package (scripts/test.sh does)");
    uid = Number(id.stdout.trim());
    gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim());
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const run = (file, args) =>
    execFileSync(join(bin, file), args, { stdio: ["ignore", "pipe", "pipe"], ...(asRoot ? { uid, gid } : {}), env: { ...process.env, LC_ALL: "C" } });
  run("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8"]);
  const port = await freePort();
  const options = [
    `-p ${port}`,
    "-c listen_addresses=127.0.0.1",
    `-c unix_socket_directories=${dir}`,
    "-c max_connections=300",
    // Test clusters only: nothing here needs to survive a power cut.
    "-c fsync=off",
    "-c synchronous_commit=off",
    "-c full_page_writes=off",
    // A caller's own (bench/many-workers.mjs: PostgreSQL's default max_connections): the last -c of a name wins.
    ...Object.entries(settings).map(([name, value]) => `-c ${name}=${value}`),
  ].join(" ");
  run("pg_ctl", ["-D", data, "-l", join(dir, "log"), "-o", options, "-w", "-t", "30", "start"]);
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    try {
      run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    } catch {
      // Already gone.
    }
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", stop);
  const pgCtl = (args) =>
    new Promise((resolve, reject) => {
      execFile(join(bin, "pg_ctl"), ["-D", data, ...args], { ...(asRoot ? { uid, gid } : {}), env: { ...process.env, LC_ALL: "C" } }, (err) =>
        err ? reject(err) : resolve(),
      );
    });
  let n = 0;
  return {
    url,
    port,
    stop,
    // `pg_ctl restart -m fast`: every connection is terminated, the server is back on the same port.
    // Asynchronous, as down() and up(): the test's own servers (a model, say) keep answering meanwhile.
    restart: () => pgCtl(["-l", join(dir, "log"), "-o", options, "-m", "fast", "-w", "-t", "30", "restart"]),
    // The server stopped (`-m fast`), its data kept, and started again on the same port: a database that is away for a while.
    down: () => pgCtl(["-m", "fast", "-w", "-t", "30", "stop"]),
    up: () => pgCtl(["-l", join(dir, "log"), "-o", options, "-w", "-t", "30", "start"]),
    async createDatabase(prefix = "t") {
      const name = `${prefix.replace(/\W/g, "_")}_${process.pid}_${n++}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
  };
}
