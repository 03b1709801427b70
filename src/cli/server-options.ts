/**
 * The options of the commands that listen (docs/cli.md): `runtime serve`,
 * `runtime mcp --http` and a worker's operations port, declared and checked
 * in one place, with the same rules and messages (docs/server.md#authentication).
 */
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { describeError, RuntimeError } from "../errors.js";
import { isLoopback, type CallerEntry } from "../server/auth.js";

/** What commander gives for the listening options. */
export interface ServerFlags {
  port?: string;
  host: string;
  token?: string;
  tokens?: string;
  tlsCert?: string;
  tlsKey?: string;
  rate?: string;
  corsOrigin?: string;
  maxRuns?: string;
  maxBodyMb?: string;
}

/** The same options, checked. */
export interface ServerSettings {
  port: number | undefined;
  host: string;
  /** The one token given (the option, else the environment variable); unset with `callers`. */
  token: string | undefined;
  callers: CallerEntry[] | undefined;
  tls: { cert: Buffer; key: Buffer } | undefined;
  rate: number | undefined;
  /** An origin whose pages may call the server (CORS); other sites' requests are refused. */
  corsOrigin: string | undefined;
  maxLiveRuns: number | undefined;
  maxBodyBytes: number | undefined;
}

/** Declare the listening options of `runtime serve` and `runtime mcp --http`. */
export function serverFlags(command: Command, defaultPort: string, prefix = ""): Command {
  return command
    .option("-p, --port <n>", `${prefix}port to listen on; 0 picks a free one`, defaultPort)
    .option("-H, --host <host>", `${prefix}address to listen on (only this one)`, "127.0.0.1")
    .option("--token <token>", `${prefix}the token every request must present (default $RUNTIME_SERVE_TOKEN, else a fresh one, printed)`)
    .option(
      "--tokens <file>",
      `${prefix}callers with tokens and scopes of their own, instead of --token (YAML: name, token_sha256 or token_env, scopes; docs/server.md#authentication)`,
    )
    .option("--tls-cert <file>", `${prefix}serve HTTPS with this certificate (PEM); needs --tls-key`)
    .option("--tls-key <file>", `${prefix}the certificate's private key (PEM)`)
    .option("--rate <n>", `${prefix}requests per second a token may make on average`, "50")
    .option("--cors-origin <origin>", `${prefix}allow this origin (e.g. http://localhost:3000) to call the server from its pages; off by default`);
}

const usage = (message: string) => new RuntimeError("USAGE", message);

/**
 * Check the listening options: a USAGE error names the first one wrong. A
 * server beyond loopback needs a token of one's own (`tokenEnv`, the option
 * or a tokens file) since a printed one could be missed.
 */
export async function parseServerFlags(flags: ServerFlags, tokenEnv = "RUNTIME_SERVE_TOKEN"): Promise<ServerSettings> {
  const port = flags.port === undefined ? undefined : Number(flags.port);
  if (port !== undefined && (!Number.isInteger(port) || port < 0 || port > 65535))
    throw usage(`--port must be an integer from 0 to 65535, not '${flags.port}'`);
  const rate = flags.rate === undefined ? undefined : Number(flags.rate);
  if (rate !== undefined && !(rate > 0)) throw usage(`--rate must be a positive number, not '${flags.rate}'`);
  const maxLiveRuns = flags.maxRuns === undefined ? undefined : Number(flags.maxRuns);
  if (maxLiveRuns !== undefined && (!Number.isInteger(maxLiveRuns) || maxLiveRuns < 1))
    throw usage(`--max-runs must be a positive integer, not '${flags.maxRuns}'`);
  const maxBodyMb = flags.maxBodyMb === undefined ? undefined : Number(flags.maxBodyMb);
  if (maxBodyMb !== undefined && (!(maxBodyMb > 0) || maxBodyMb > 512))
    throw usage(`--max-body-mb must be a number of MiB above 0 and at most 512, not '${flags.maxBodyMb}'`);
  if (flags.tokens !== undefined && flags.token !== undefined) throw usage("give either --token or --tokens, not both");
  // A tokens file names every caller: the environment's token is not one of them.
  const token = flags.tokens !== undefined ? undefined : (flags.token ?? (process.env[tokenEnv] || undefined));
  if (token !== undefined && token.length < 16) throw usage("the token must be at least 16 characters long");
  let callers: CallerEntry[] | undefined;
  try {
    // Loaded only when asked for: the YAML parser and ajv stay out of a plain start.
    if (flags.tokens !== undefined) callers = (await import("../server/tokens-file.js")).loadTokensFile(flags.tokens);
  } catch (err) {
    throw usage((err as Error).message);
  }
  if (!isLoopback(flags.host) && token === undefined && callers === undefined) {
    throw usage(
      `refusing to listen on ${flags.host} without a token of your own: give one with --token or ${tokenEnv} (and use --tls-cert/--tls-key or a TLS proxy beyond this machine)`,
    );
  }
  return {
    port,
    host: flags.host,
    token,
    callers,
    tls: tlsOf(flags),
    rate,
    corsOrigin: flags.corsOrigin,
    maxLiveRuns,
    maxBodyBytes: maxBodyMb === undefined ? undefined : Math.round(maxBodyMb * 1024 * 1024),
  };
}

function tlsOf(flags: ServerFlags): { cert: Buffer; key: Buffer } | undefined {
  if ((flags.tlsCert === undefined) !== (flags.tlsKey === undefined)) throw usage("--tls-cert and --tls-key go together");
  if (flags.tlsCert === undefined || flags.tlsKey === undefined) return undefined;
  try {
    return { cert: readFileSync(flags.tlsCert), key: readFileSync(flags.tlsKey) };
  } catch (err) {
    throw usage(`cannot read the TLS files: ${describeError(err)}`);
  }
}
