import type { Command } from "commander";
import { describeError } from "../../errors.js";
import { loadTeamOrReport } from "../load-team.js";
import type { Telemetry } from "../../telemetry/telemetry.js";
import type { Store } from "../../store/store.js";
import { startTelemetryIfAsked } from "../telemetry.js";
import { EXIT, type SetExit } from "../exit.js";
import { untilStopped } from "../signals.js";
import { STORE_OPTION_HELP, storeUrl } from "../store-option.js";
import { parseServerFlags, serverFlags, type ServerFlags, type ServerSettings } from "../server-options.js";

interface ServeOptions extends ServerFlags {
  traceDir?: string;
  otel?: boolean;
  store?: string;
}

/** `runtime serve FILE [--port N] [--host H] [--trace-dir DIR]`: the HTTP server, until stopped. */
export function registerServe(program: Command, setExit: SetExit): void {
  serverFlags(
    program
      .command("serve")
      .description("serve a team over HTTP: its API with events as SSE, the page, OpenAI-compatible, A2A and MCP (at /mcp) endpoints")
      .argument("<file>", "team file"),
    "8787",
  )
    .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
    .option("--max-runs <n>", "runs in progress at once; more get a 429", "16")
    .option("--max-body-mb <n>", "largest request body, in MiB (attachments come in it, in base64: docs/attachments.md)", "1")
    .option("--store <url>", `${STORE_OPTION_HELP}; with PostgreSQL each run is queued for \`runtime worker\` processes`)
    .option(
      "--otel",
      "export OpenTelemetry spans over OTLP/HTTP to $OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318 (on by itself when that variable is set)",
    )
    .action(async (file: string, opts: ServeOptions) => {
      setExit(await serve(file, opts));
    });
}

async function serve(file: string, opts: ServeOptions): Promise<number> {
  const fail = (message: string, code: number) => {
    process.stderr.write(`runtime serve: ${message}\n`);
    return code;
  };
  let settings: ServerSettings;
  let url: string | undefined;
  try {
    settings = await parseServerFlags(opts);
    url = storeUrl(opts.store);
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  const { token, callers, tls } = settings;

  // The engine and the server are loaded only when this command runs, so `runtime --help` starts fast.
  const { startServer } = await import("../../server/server.js");
  const team = await loadTeamOrReport(file, "serve");
  if (!team) return EXIT.USAGE;
  let telemetry: Telemetry | undefined;
  try {
    telemetry = await startTelemetryIfAsked(opts.otel, "serve");
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }

  const stopped = untilStopped();
  const open = async (store?: Store) => {
    try {
      return {
        store,
        server: await startServer({
          team,
          port: settings.port ?? 8787,
          host: settings.host,
          ...(settings.rate !== undefined ? { rate: settings.rate } : {}),
          ...(settings.maxLiveRuns !== undefined ? { maxLiveRuns: settings.maxLiveRuns } : {}),
          ...(settings.maxBodyBytes !== undefined ? { maxBodyBytes: settings.maxBodyBytes } : {}),
          ...(token !== undefined ? { token } : {}),
          ...(callers ? { callers } : {}),
          ...(tls ? { tls } : {}),
          ...(opts.traceDir !== undefined ? { traceDir: opts.traceDir } : {}),
          ...(opts.corsOrigin !== undefined ? { corsOrigin: opts.corsOrigin } : {}),
          ...(telemetry ? { runSinks: () => [telemetry.sink({ team })] } : {}),
          ...(store ? { store } : {}),
        }),
      };
    } catch (err) {
      await store?.close();
      throw err;
    }
  };
  let opened: Awaited<ReturnType<typeof open>> | undefined;
  try {
    if (url === undefined) opened = await open();
    else {
      const [{ createStore }, { untilReachable }] = await Promise.all([import("../../store/create.js"), import("../until-reachable.js")]);
      // Started beside its database (docs/scale-out.md#when-the-database-goes-away): it waits for it.
      opened = await untilReachable({
        url,
        open: async () => open(await createStore(url)),
        close: async ({ store, server }) => {
          await server.close();
          await store?.close();
        },
        stopped,
        say: (line) => process.stderr.write(`runtime serve: ${line}\n`),
      });
    }
  } catch (err) {
    await telemetry?.shutdown();
    return fail(describeError(err), EXIT.RUN_ERROR);
  }
  if (!opened) {
    await telemetry?.shutdown();
    process.stderr.write("runtime serve: stopping\n");
    return EXIT.OK;
  }
  const { store, server } = opened;
  // The token is printed only when the server made it: one given is the caller's to keep.
  const shown = token === undefined && !callers ? server.pageUrl : `${server.url}/?token=<your token>`;
  process.stderr.write(`runtime serve: ${team.name} listening on ${server.url}/ (Ctrl-C to stop)\n`);
  if (callers) process.stderr.write(`runtime serve: ${callers.length} caller(s) from ${opts.tokens}: ${callers.map((c) => c.name).join(", ")}\n`);
  if (store) process.stderr.write(`runtime serve: runs are queued in ${store.location} for \`runtime worker\` processes\n`);
  if (telemetry) process.stderr.write(`runtime serve: sending spans to ${telemetry.endpoint}\n`);
  process.stderr.write(`runtime serve: open ${shown}; API requests send Authorization: Bearer <token>\n`);

  // Stopping cancels the runs in progress; each keeps its trace, ending with run.finished.
  await stopped;
  process.stderr.write("runtime serve: stopping\n");
  await server.close();
  await store?.close();
  // The cancelled runs' last spans go out before the process ends.
  await telemetry?.shutdown();
  return EXIT.OK;
}
