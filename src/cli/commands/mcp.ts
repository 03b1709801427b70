import type { Command } from "commander";
import type { ResolvedTeam } from "../../config/types.js";
import { describeError } from "../../errors.js";
import { loadTeamOrReport } from "../load-team.js";
import { EXIT, type SetExit } from "../exit.js";
import { parseServerFlags, serverFlags, type ServerFlags, type ServerSettings } from "../server-options.js";
import { untilStopped } from "../signals.js";

interface McpOptions extends ServerFlags {
  agent?: string;
  traceDir?: string;
  http?: boolean;
}

/**
 * `runtime mcp FILE [--agent NAME] [--http --port N]`: serve the team over
 * MCP (docs/mcp.md#serving-a-team-over-mcp). On stdin and stdout (for Claude
 * Desktop, Cursor or any MCP client) until the client closes stdin; stdout
 * carries the protocol only, anything else goes to stderr. With `--http`,
 * the HTTP app of `runtime serve` with MCP (at /mcp) and the probes alone,
 * behind the same tokens, until stopped.
 */
export function registerMcp(program: Command, setExit: SetExit): void {
  serverFlags(
    program
      .command("mcp")
      .description("serve a team over MCP, on stdio or with --http over Streamable HTTP: each agent (or --agent) is a tool taking {query}")
      .argument("<file>", "team file")
      .option("-a, --agent <name>", "serve only this agent")
      .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
      .option("--http", "serve Streamable HTTP at /mcp instead of stdio"),
    "8788",
    "with --http: ",
  ).action(async (file: string, opts: McpOptions) => {
    setExit(await serveMcp(file, opts));
  });
}

const fail = (message: string, code: number): number => {
  process.stderr.write(`runtime mcp: ${message}\n`);
  return code;
};

async function serveMcp(file: string, opts: McpOptions): Promise<number> {
  let settings: ServerSettings | undefined;
  try {
    if (opts.http) settings = await parseServerFlags(opts);
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  const team = await loadTeamOrReport(file, "mcp");
  if (!team) return EXIT.USAGE;
  if (opts.agent !== undefined && !team.agents[opts.agent]) {
    return fail(`unknown agent '${opts.agent}' (agents: ${Object.keys(team.agents).join(", ")})`, EXIT.USAGE);
  }
  const serving = `${team.name} (${opts.agent ?? Object.keys(team.agents).join(", ")})`;
  return settings ? serveHttp(team, opts, settings, serving) : serveStdio(team, opts, serving);
}

/** Over stdio: one MCP server whose calls go through `launchRun` as a server's do, as the one serve token's caller. */
async function serveStdio(team: ResolvedTeam, opts: McpOptions, serving: string): Promise<number> {
  const [{ StdioServerTransport }, { teamMcpServer }, { openRunContext }, { serveTokenCaller }, { readFile }] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/stdio.js"),
    import("../../server/mcp-server.js"),
    import("../../server/run-context.js"),
    import("../../server/auth.js"),
    import("node:fs/promises"),
  ]);
  let run: Awaited<ReturnType<typeof openRunContext>>;
  try {
    // Held open while the server runs: its runs share it (src/store/sqlite/store.ts).
    run = await openRunContext({ team, traceDir: opts.traceDir });
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  const pkg = JSON.parse(await readFile(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
  const servers = teamMcpServer(run.ctx, { ...(opts.agent !== undefined ? { agent: opts.agent } : {}), version: pkg.version });
  const server = servers.create(serveTokenCaller(""));
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
  await servers.idle();
  await run.ctx.live.cancelAll();
  await run.close();
  return EXIT.OK;
}

/** Over Streamable HTTP: `runtime serve`'s app with MCP and the probes alone. */
async function serveHttp(team: ResolvedTeam, opts: McpOptions, settings: ServerSettings, serving: string): Promise<number> {
  const { startServer } = await import("../../server/server.js");
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer({
      team,
      only: "mcp",
      port: settings.port ?? 8788,
      host: settings.host,
      ...(opts.agent !== undefined ? { mcp: { agent: opts.agent } } : {}),
      ...(opts.traceDir !== undefined ? { traceDir: opts.traceDir } : {}),
      ...(settings.rate !== undefined ? { rate: settings.rate } : {}),
      ...(settings.callers ? { callers: settings.callers } : settings.token !== undefined ? { token: settings.token } : {}),
      ...(settings.tls ? { tls: settings.tls } : {}),
      ...(settings.corsOrigin !== undefined ? { corsOrigin: settings.corsOrigin } : {}),
    });
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  process.stderr.write(`runtime mcp: serving ${serving} on ${server.url}/mcp (Ctrl-C to stop)\n`);
  // The token is printed only when the server made it: one given is the caller's to keep.
  process.stderr.write(`runtime mcp: clients send Authorization: Bearer ${settings.token === undefined && server.token ? server.token : "<your token>"}\n`);
  await untilStopped();
  process.stderr.write("runtime mcp: stopping\n");
  await server.close();
  return EXIT.OK;
}
