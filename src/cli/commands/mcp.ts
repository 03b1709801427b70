import type { Command } from "commander";
import { describeError } from "../../errors.js";
import { isLoopback, type CallerEntry } from "../../server/auth.js";
import type { TeamMcpServers } from "../../server/mcp-server.js";
import { loadTeamOrReport } from "../load-team.js";
import { EXIT, type SetExit } from "../exit.js";
import { untilStopped } from "../signals.js";

interface McpOptions {
  agent?: string;
  traceDir?: string;
  http?: boolean;
  port: string;
  host: string;
  token?: string;
  tokens?: string;
}

/**
 * `runtime mcp FILE [--agent NAME] [--http --port N]`: serve the team over
 * MCP (docs/mcp.md#serving-a-team-over-mcp). On stdin and stdout (for Claude
 * Desktop, Cursor or any MCP client) until the client closes stdin; stdout
 * carries the protocol only, anything else goes to stderr. With `--http`,
 * over Streamable HTTP behind the serve token, until stopped.
 */
export function registerMcp(program: Command, setExit: SetExit): void {
  program
    .command("mcp")
    .description("serve a team over MCP, on stdio or with --http over Streamable HTTP: each agent (or --agent) is a tool taking {query}")
    .argument("<file>", "team file")
    .option("-a, --agent <name>", "serve only this agent")
    .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
    .option("--http", "serve Streamable HTTP at /mcp instead of stdio")
    .option("-p, --port <n>", "with --http: port to listen on; 0 picks a free one", "8788")
    .option("-H, --host <host>", "with --http: address to listen on (only this one)", "127.0.0.1")
    .option("--token <token>", "with --http: the token every request must present (default $RUNTIME_SERVE_TOKEN, else a fresh one, printed)")
    .option("--tokens <file>", "with --http: callers with tokens of their own, instead of --token (as runtime serve --tokens; a session needs the run scope)")
    .action(async (file: string, opts: McpOptions) => {
      setExit(await serveMcp(file, opts));
    });
}

const fail = (message: string, code: number): number => {
  process.stderr.write(`runtime mcp: ${message}\n`);
  return code;
};

async function serveMcp(file: string, opts: McpOptions): Promise<number> {
  const port = Number(opts.port);
  if (opts.tokens !== undefined && opts.token !== undefined) return fail("give either --token or --tokens, not both", EXIT.USAGE);
  const token = opts.tokens !== undefined ? undefined : (opts.token ?? (process.env["RUNTIME_SERVE_TOKEN"] || undefined));
  let callers: CallerEntry[] | undefined;
  if (opts.http) {
    // The same rules as `runtime serve` (docs/server.md#authentication).
    if (!Number.isInteger(port) || port < 0 || port > 65535) return fail(`--port must be an integer from 0 to 65535, not '${opts.port}'`, EXIT.USAGE);
    if (token !== undefined && token.length < 16) return fail("the token must be at least 16 characters long", EXIT.USAGE);
    try {
      if (opts.tokens !== undefined) callers = (await import("../../server/tokens-file.js")).loadTokensFile(opts.tokens);
    } catch (err) {
      return fail((err as Error).message, EXIT.USAGE);
    }
    if (!isLoopback(opts.host) && token === undefined && callers === undefined) {
      return fail(
        `refusing to listen on ${opts.host} without a token of your own: give one with --token or RUNTIME_SERVE_TOKEN (and a TLS proxy beyond this machine)`,
        EXIT.USAGE,
      );
    }
  }
  const [{ teamMcpServer }, { resolveTraceDir }, { createStore }, { readFile }] = await Promise.all([
    import("../../server/mcp-server.js"),
    import("../../engine/trace-dir.js"),
    import("../../store/create.js"),
    import("node:fs/promises"),
  ]);
  const team = await loadTeamOrReport(file, "mcp");
  if (!team) return EXIT.USAGE;
  if (opts.agent !== undefined && !team.agents[opts.agent]) {
    return fail(`unknown agent '${opts.agent}' (agents: ${Object.keys(team.agents).join(", ")})`, EXIT.USAGE);
  }
  const traceDir = resolveTraceDir(opts.traceDir);
  // Held open while the server runs: its runs share it (src/store/sqlite/store.ts).
  let embedded: Awaited<ReturnType<typeof createStore>>;
  try {
    embedded = await createStore(traceDir);
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  const pkg = JSON.parse(await readFile(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
  const servers = teamMcpServer(team, { ...(opts.agent !== undefined ? { agent: opts.agent } : {}), traceDir, version: pkg.version });
  const serving = `${team.name} (${opts.agent ?? Object.keys(team.agents).join(", ")})`;
  const code = opts.http ? await serveHttp(servers, serving, { port, host: opts.host, token, callers }) : await serveStdio(servers, serving);
  await servers.idle();
  await embedded.close();
  return code;
}

async function serveStdio(servers: TeamMcpServers, serving: string): Promise<number> {
  const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
  const server = servers.create();
  // The client closing stdin (or a signal) ends the server; runs in flight are cancelled by the SDK's close.
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
    process.stdin.once("end", () => void server.close());
    process.stdin.once("close", () => void server.close());
    process.once("SIGINT", () => void server.close());
    process.once("SIGTERM", () => void server.close());
  });
  server.server.onerror = (err) => process.stderr.write(`runtime mcp: ${describeError(err)}\n`);
  await server.connect(new StdioServerTransport());
  process.stderr.write(`runtime mcp: serving ${serving} on stdio\n`);
  await closed;
  return EXIT.OK;
}

async function serveHttp(
  servers: TeamMcpServers,
  serving: string,
  opts: { port: number; host: string; token: string | undefined; callers: CallerEntry[] | undefined },
): Promise<number> {
  const [{ startMcpHttp }, { newToken }] = await Promise.all([import("../../server/mcp-http.js"), import("../../server/auth.js")]);
  const token = opts.callers ? undefined : (opts.token ?? newToken());
  let http: Awaited<ReturnType<typeof startMcpHttp>>;
  try {
    http = await startMcpHttp({ servers, port: opts.port, host: opts.host, ...(opts.callers ? { callers: opts.callers } : { token }) });
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  process.stderr.write(`runtime mcp: serving ${serving} on ${http.url} (Ctrl-C to stop)\n`);
  // The token is printed only when the server made it: one given is the caller's to keep.
  process.stderr.write(`runtime mcp: clients send Authorization: Bearer ${opts.token === undefined && token !== undefined ? token : "<your token>"}\n`);
  await untilStopped();
  process.stderr.write("runtime mcp: stopping\n");
  await http.close();
  return EXIT.OK;
}
