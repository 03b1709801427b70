import type { Command } from "commander";
import { codeOf, describeError } from "../../errors.js";
import type { ResolvedTeam } from "../../config/types.js";
import { newToken } from "../../server/auth.js";
import { loadTeamOrReport } from "../load-team.js";
import { STORE_OPTION_HELP, storeUrl } from "../store-option.js";
import { EXIT, exitStatusOf, type SetExit } from "../exit.js";
import { untilStopped } from "../signals.js";
import { parseServerFlags } from "../server-options.js";

interface WorkerOptions {
  store?: string;
  concurrency: string;
  poolSize: string;
  listen: boolean;
  pollMs: string;
  leaseMs: string;
  graceMs: string;
  port?: string;
  host: string;
  token?: string;
  quiet?: boolean;
}

/** `runtime worker TEAM... --store postgres://...`: take queued runs of these teams until stopped (docs/scale-out.md#workers). */
export function registerWorker(program: Command, setExit: SetExit): void {
  program
    .command("worker")
    .description("take runs that `runtime serve --store postgres://...` queued, for these teams, until stopped (SIGTERM: finish or hand back)")
    .argument("<files...>", "team files whose runs this worker takes")
    .option("--store <url>", STORE_OPTION_HELP)
    .option("-c, --concurrency <n>", "runs at once", "4")
    .option("--pool-size <n>", "PostgreSQL connections this worker may hold (besides its LISTEN one)", "4")
    .option("--no-listen", "poll for new runs only (a large fleet, or PgBouncer in transaction mode): no LISTEN connection")
    .option("--poll-ms <ms>", "longest pause between two looks at the queue", "1000")
    .option("--lease-ms <ms>", "how long a run stays this worker's without a renewal; another worker resumes it after", "30000")
    .option("--grace-ms <ms>", "on SIGTERM, how long runs in progress may go on before they are handed back", "30000")
    .option("-p, --port <n>", "serve /healthz, /readyz and /metrics on this port (0 picks a free one); off by default")
    .option("-H, --host <host>", "address of those endpoints", "127.0.0.1")
    .option("--token <token>", "the bearer token /metrics wants (default $RUNTIME_WORKER_TOKEN, else a fresh one, printed)")
    .option("-q, --quiet", "print nothing about each run")
    .action(async (files: string[], opts: WorkerOptions) => {
      setExit(await work(files, opts));
    });
}

async function work(files: string[], opts: WorkerOptions): Promise<number> {
  const fail = (message: string, code: number) => {
    process.stderr.write(`runtime worker: ${message}\n`);
    return code;
  };
  const concurrency = Number(opts.concurrency);
  if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 1000)
    return fail(`--concurrency must be an integer from 1 to 1000, not '${opts.concurrency}'`, EXIT.USAGE);
  const poolSize = Number(opts.poolSize);
  if (!Number.isInteger(poolSize) || poolSize < 2 || poolSize > 100)
    return fail(`--pool-size must be an integer from 2 to 100, not '${opts.poolSize}'`, EXIT.USAGE);
  const pollMs = Number(opts.pollMs);
  if (!Number.isInteger(pollMs) || pollMs < 10) return fail(`--poll-ms must be an integer of at least 10, not '${opts.pollMs}'`, EXIT.USAGE);
  const leaseMs = Number(opts.leaseMs);
  if (!Number.isInteger(leaseMs) || leaseMs < 300) return fail(`--lease-ms must be an integer of at least 300, not '${opts.leaseMs}'`, EXIT.USAGE);
  const graceMs = Number(opts.graceMs);
  if (!Number.isInteger(graceMs) || graceMs < 0) return fail(`--grace-ms must be a non-negative integer, not '${opts.graceMs}'`, EXIT.USAGE);
  let port: number | undefined;
  let token: string | undefined;
  try {
    // The operations port's options, checked as every server's (src/cli/server-options.ts).
    if (opts.port !== undefined) ({ port, token } = await parseServerFlags({ port: opts.port, host: opts.host, token: opts.token }, "RUNTIME_WORKER_TOKEN"));
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  let url: string | undefined;
  try {
    url = storeUrl(opts.store);
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  if (url === undefined) return fail("a worker takes runs from PostgreSQL: give --store postgres://... or set RUNTIME_STORE_URL", EXIT.USAGE);

  const teams: ResolvedTeam[] = [];
  for (const file of files) {
    const team = await loadTeamOrReport(file, "worker");
    if (!team) return EXIT.USAGE;
    if (teams.some((t) => t.name === team.name)) return fail(`two teams are named ${team.name}: a run names its team by name`, EXIT.USAGE);
    teams.push(team);
  }

  // PostgreSQL and the queue load only when this command runs, so `runtime --help` starts fast.
  const [{ createStore }, { startWorker }, { serveHealth }, { untilReachable }] = await Promise.all([
    import("../../store/create.js"),
    import("../../queue/worker.js"),
    import("../../server/health.js"),
    import("../until-reachable.js"),
  ]);
  const log = opts.quiet ? () => {} : (line: string) => process.stderr.write(`runtime worker: ${line}\n`);
  const stopped = untilStopped();
  const open = async () => {
    const store = await createStore(url, { maxConnections: poolSize });
    try {
      return { store, worker: await startWorker({ store, teams, concurrency, leaseMs, pollMs, listen: opts.listen, log }) };
    } catch (err) {
      await store.close();
      throw err;
    }
  };
  let opened: Awaited<ReturnType<typeof open>> | undefined;
  // Up before the database is: a worker waiting for it is alive (/healthz) and not ready (/readyz 503).
  let ops: Awaited<ReturnType<typeof serveHealth>> | undefined;
  if (port !== undefined) {
    const opsToken = token ?? newToken();
    try {
      ops = await serveHealth(
        {
          ready: async () => (opened ? opened.worker.ready() : false),
          metrics: async () =>
            opened
              ? opened.worker.metrics.render({ runtime_worker_runs_running: { help: "Runs this worker is running now.", value: opened.worker.running } })
              : "",
        },
        { port, host: opts.host, token: opsToken },
      );
    } catch (err) {
      return fail(describeError(err), EXIT.USAGE);
    }
    process.stderr.write(`runtime worker: /healthz, /readyz and /metrics on ${ops.url}${token === undefined ? ` (metrics token: ${opsToken})` : ""}\n`);
  }
  try {
    // Started beside its database (docs/scale-out.md#when-the-database-goes-away): it waits for it, said even with --quiet.
    opened = await untilReachable({
      url,
      open,
      close: async ({ store, worker }) => {
        await worker.stop({ graceMs: 0 });
        await store.close();
      },
      stopped,
      say: (line) => process.stderr.write(`runtime worker: ${line}\n`),
    });
  } catch (err) {
    await ops?.close();
    return fail(describeError(err), exitStatusOf(codeOf(err)));
  }
  if (!opened) {
    await ops?.close();
    process.stderr.write("runtime worker: stopped\n");
    return EXIT.OK;
  }
  const { store, worker } = opened;
  process.stderr.write(`runtime worker: ${worker.id} takes runs of ${teams.map((t) => t.name).join(", ")} from ${store.location}, ${concurrency} at once\n`);

  await stopped;
  process.stderr.write(`runtime worker: stopping: ${worker.running} run(s) in progress get ${graceMs} ms, then go back to the queue\n`);
  await worker.stop({ graceMs });
  await ops?.close();
  await store.close();
  process.stderr.write("runtime worker: stopped\n");
  return EXIT.OK;
}
