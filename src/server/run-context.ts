/**
 * What the protocols of a server share to start and follow runs
 * (`ServerContext`, src/server/runs-api.ts): the store, the queue on
 * PostgreSQL, the runs of this process, the limits. Opened once by
 * `startServer` and by `runtime mcp` over stdio, so that every run goes
 * through `launchRun` the same way.
 */
import type { ResolvedTeam } from "../config/types.js";
import { resolveTraceDir } from "../engine/trace-dir.js";
import type { EventSink } from "../events/bus.js";
import { RunQueue } from "../queue/run-queue.js";
import { openStore } from "../store/create.js";
import type { Store } from "../store/store.js";
import { RunMetrics } from "../telemetry/metrics.js";
import { LiveRuns } from "./live-runs.js";
import type { ServerContext } from "./runs-api.js";
import { clientsDropped, STALL_LIMIT_MS } from "./sse.js";

export interface RunContextOptions {
  team: ResolvedTeam;
  /** Where traces are stored and read. @default $RUNTIME_TRACE_DIR or ./.runtime */
  traceDir?: string | undefined;
  /**
   * Where runs are kept (`createStore`). A PostgreSQL store makes this a
   * server of many (docs/scale-out.md): each run is queued for `runtime
   * worker` processes and followed through the store. The caller closes it.
   * @default the SQLite files under traceDir, runs executed in this process
   */
  store?: Store | undefined;
  /** Further sinks for each run, made per run (e.g. `() => [telemetry.sink({ team })]`, docs/telemetry.md). */
  runSinks?: (() => EventSink[]) | undefined;
  /** Largest accepted request body, in bytes. @default 1048576 */
  maxBodyBytes?: number | undefined;
  /** Runs that may be in progress at once; more get a 429. @default 16 */
  maxLiveRuns?: number | undefined;
  /** Milliseconds an SSE client may read nothing before it is dropped; its run goes on (docs/server.md#slow-readers). @default 60000 */
  stallLimitMs?: number | undefined;
}

export interface RunContext {
  ctx: ServerContext;
  metrics: RunMetrics;
  /** Whether runs can be taken now: the store answers and, with a queue, its notifications are heard. */
  ready(): Promise<boolean>;
  /** The runs' metrics with the gauges of this server and its queue, in Prometheus' text. */
  renderMetrics(): Promise<string>;
  /** Close what was opened here (the embedded store, the queue); a given store is the caller's. */
  close(): Promise<void>;
}

export async function openRunContext(options: RunContextOptions): Promise<RunContext> {
  const traceDir = resolveTraceDir(options.traceDir);
  const metrics = new RunMetrics();
  // The embedded trace store, opened here when no store is given.
  const embedded = options.store ? undefined : await openStore(traceDir);
  await embedded?.ping();
  const queued = options.store?.database ? await openQueue(options.store, options.team) : undefined;
  const ctx: ServerContext = {
    team: options.team,
    traceDir,
    store: (options.store ?? embedded)!.runs,
    ...(queued ? { queued } : {}),
    live: new LiveRuns(() => [metrics.sink, ...(options.runSinks?.() ?? [])], options.store),
    maxBodyBytes: options.maxBodyBytes ?? 1024 * 1024,
    maxLiveRuns: options.maxLiveRuns ?? 16,
    stallLimitMs: options.stallLimitMs ?? STALL_LIMIT_MS,
    streams: new Set(),
  };
  const store = options.store;
  return {
    ctx,
    metrics,
    async ready() {
      if (queued && !queued.listening.up) return false;
      return store ? store.ping().then(() => true) : true;
    },
    async renderMetrics() {
      // How busy the whole server is, every caller's runs counted.
      const counts = queued ? await queued.queue.counts() : undefined;
      return metrics.render(
        {
          runtime_runs_live: { help: "Runs this server is running or streaming now.", value: ctx.live.size },
          ...(counts
            ? {
                runtime_runs_queued: { help: "Runs waiting for a worker (the whole queue).", value: counts.queued },
                runtime_runs_running: { help: "Runs held by a worker now (the whole queue).", value: counts.running },
              }
            : {}),
        },
        {
          runtime_sse_clients_dropped_total: { help: "Stream clients dropped for reading nothing for the stall limit.", value: clientsDropped() },
        },
      );
    },
    async close() {
      queued?.listening.close();
      await queued?.queue.close();
      await embedded?.close();
    },
  };
}

async function openQueue(store: Store, team: ResolvedTeam): Promise<NonNullable<ServerContext["queued"]>> {
  const queue = await RunQueue.open(store, [team.name]);
  // Listening from the start: a server that cannot hear the store's notifications does not start.
  const listening = await store.runs
    .watch("*", () => {})
    .catch(async (err: unknown) => {
      await queue.close();
      throw err;
    });
  return { queue, listening, attachments: () => store.attachments() };
}
