/**
 * PgBouncer in transaction mode in front of a bench's PostgreSQL
 * (bench/many-workers.mjs; the setting of docs/scale-out.md#100-workers-on-one-postgresql):
 * many clients' pools share `poolSize` server connections. Needs `pgbouncer`
 * on PATH or in /usr/sbin (the Debian package); as root it runs as `postgres`.
 */
import { spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

function binary() {
  const found = spawnSync("sh", ["-c", "command -v pgbouncer"], { encoding: "utf8" }).stdout.trim();
  if (found) return found;
  if (existsSync("/usr/sbin/pgbouncer")) return "/usr/sbin/pgbouncer";
  throw new Error("pgbouncer is not installed: install the pgbouncer package (apt-get install pgbouncer)");
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** Start PgBouncer for the PostgreSQL on `pgPort`; resolves with `url(database)` and `stop()`. */
export async function startPgBouncer(pgPort, { poolSize = 40, maxClients = 1000 } = {}) {
  const bin = binary();
  const dir = mkdtempSync(join(tmpdir(), "bench-pgbouncer-"));
  const port = await freePort();
  writeFileSync(join(dir, "users.txt"), '"postgres" ""\n');
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    `[databases]
* = host=127.0.0.1 port=${pgPort}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = ${port}
unix_socket_dir = ${dir}
auth_type = trust
auth_file = ${join(dir, "users.txt")}
pool_mode = transaction
default_pool_size = ${poolSize}
max_client_conn = ${maxClients}
; node-postgres sends these at connect; transaction pooling cannot keep them per client
ignore_startup_parameters = statement_timeout,idle_in_transaction_session_timeout,extra_float_digits
logfile = ${join(dir, "pgbouncer.log")}
`,
  );
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(spawnSync("id", ["-u", "postgres"], { encoding: "utf8" }).stdout.trim());
    const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim());
    for (const f of ["", "users.txt", "pgbouncer.ini"]) chownSync(join(dir, f), uid, gid);
  }
  const child = spawn(bin, [...(asRoot ? ["-u", "postgres"] : []), "-q", join(dir, "pgbouncer.ini")], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  child.stderr.setEncoding("utf8").on("data", (d) => (err += d));
  // Ready once it accepts connections.
  for (let i = 0; ; i++) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited (${child.exitCode}): ${err}`);
    const up = await new Promise((resolve) => {
      const c = connect(port, "127.0.0.1");
      c.once("connect", () => resolve(true));
      c.once("error", () => resolve(false));
      c.once("connect", () => c.destroy());
    });
    if (up) break;
    if (i > 100) throw new Error(`pgbouncer did not listen on ${port}: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  process.once("exit", () => child.kill("SIGKILL"));
  return {
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    stop: () => child.kill("SIGTERM"),
  };
}
