import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { describeError } from "../../errors.js";
import { isLoopback, type CallerEntry } from "../../server/auth.js";
import { loadTeamOrReport } from "../load-team.js";
import type { Telemetry } from "../../telemetry/telemetry.js";
import type { Store } from "../../store/store.js";
import { startTelemetryIfAsked } from "../telemetry.js";
import { EXIT, type SetExit } from "../exit.js";
import { untilStopped } from "../signals.js";
import { STORE_OPTION_HELP, storeUrl } from "../store-option.js";

interface ServeOptions {
  port: string;
  host: string;
  traceDir?: string;
  corsOrigin?: string;
  token?: string;
  tokens?: string;
  tlsCert?: string;
  tlsKey?: string;
  rate: string;
  maxRuns: string;
  maxBodyMb: string;
  otel?: boolean;
  store?: string;
}

/** `runtime serve FILE [--port N] [--host H] [--trace-dir DIR]`: the HTTP server, until stopped. */
export function registerServe(program: Command, setExit: SetExit): void {
  program
    .command("serve")
    .description("serve a team over HTTP: a chat endpoint streaming events (SSE), trace queries, and a live page")
    .argument("<file>", "team file")
    .option("-p, --port <n>", "port to listen on; 0 picks a free one", "8787")
    .option("-H, --host <host>", "address to listen on (only this one)", "127.0.0.1")
    .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
    .option("--cors-origin <origin>", "allow this origin (e.g. http://localhost:3000) to call the API; off by default")
    .option("--token <token>", "the token every request must present (default $RUNTIME_SERVE_TOKEN, else a fresh one, printed)")
    .option(
      "--tokens <file>",
      "callers with tokens and scopes of their own, instead of --token (YAML: name, token_sha256 or token_env, scopes; docs/server.md#authentication)",
    )
    .option("--tls-cert <file>", "serve HTTPS with this certificate (PEM); needs --tls-key")
    .option("--tls-key <file>", "the certificate's private key (PEM)")
    .option("--rate <n>", "requests per second the token may make on average", "50")
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
  const port = Number(opts.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) return fail(`--port must be an integer from 0 to 65535, not '${opts.port}'`, EXIT.USAGE);
  const rate = Number(opts.rate);
  if (!(rate > 0)) return fail(`--rate must be a positive number, not '${opts.rate}'`, EXIT.USAGE);
  const maxRuns = Number(opts.maxRuns);
  if (!Number.isInteger(maxRuns) || maxRuns < 1) return fail(`--max-runs must be a positive integer, not '${opts.maxRuns}'`, EXIT.USAGE);
  const maxBodyMb = Number(opts.maxBodyMb);
  if (!(maxBodyMb > 0) || maxBodyMb > 512) return fail(`--max-body-mb must be a number of MiB above 0 and at most 512, not '${opts.maxBodyMb}'`, EXIT.USAGE);
  if (opts.tokens !== undefined && opts.token !== undefined) return fail("give either --token or --tokens, not both", EXIT.USAGE);
  // A tokens file names every caller: RUNTIME_SERVE_TOKEN is not one of them.
  const token = opts.tokens !== undefined ? undefined : (opts.token ?? (process.env["RUNTIME_SERVE_TOKEN"] || undefined));
  if (token !== undefined && token.length < 16) return fail("the token must be at least 16 characters long", EXIT.USAGE);
  let callers: CallerEntry[] | undefined;
  try {
    // Loaded only when asked for: the YAML parser and ajv stay out of a plain start.
    if (opts.tokens !== undefined) callers = (await import("../../server/tokens-file.js")).loadTokensFile(opts.tokens);
  } catch (err) {
    return fail((err as Error).message, EXIT.USAGE);
  }
  if (!isLoopback(opts.host) && token === undefined && callers === undefined) {
    return fail(
      `refusing to listen on ${opts.host} without a token of your own: give one with --token or RUNTIME_SERVE_TOKEN (and use --tls-cert/--tls-key or a TLS proxy beyond this machine)`,
      EXIT.USAGE,
    );
  }
  if ((opts.tlsCert === undefined) !== (opts.tlsKey === undefined)) return fail("--tls-cert and --tls-key go together", EXIT.USAGE);
  let tls: { cert: Buffer; key: Buffer } | undefined;
  try {
    if (opts.tlsCert !== undefined && opts.tlsKey !== undefined) tls = { cert: readFileSync(opts.tlsCert), key: readFileSync(opts.tlsKey) };
  } catch (err) {
    return fail(`cannot read the TLS files: ${describeError(err)}`, EXIT.USAGE);
  }

  let url: string | undefined;
  try {
    url = storeUrl(opts.store);
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }

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
          port,
          host: opts.host,
          rate,
          maxLiveRuns: maxRuns,
          maxBodyBytes: Math.round(maxBodyMb * 1024 * 1024),
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
