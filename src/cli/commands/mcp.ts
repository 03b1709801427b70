import type { Command } from "commander";
import { describeError } from "../../errors.js";
import { loadTeamOrReport } from "../load-team.js";
import { EXIT, type SetExit } from "../exit.js";

interface McpOptions {
  agent?: string;
  traceDir?: string;
}

/**
 * `runtime mcp FILE [--agent NAME]`: serve the team over MCP on stdin and
 * stdout (for Claude Desktop, Cursor or any MCP client) until the client
 * closes stdin. Stdout carries the protocol only; anything else goes to stderr.
 */
export function registerMcp(program: Command, setExit: SetExit): void {
  program
    .command("mcp")
    .description("serve a team over MCP on stdio: each agent (or --agent) is a tool taking {query}")
    .argument("<file>", "team file")
    .option("-a, --agent <name>", "serve only this agent")
    .option("--trace-dir <dir>", "trace directory (default $RUNTIME_TRACE_DIR or .runtime)")
    .action(async (file: string, opts: McpOptions) => {
      setExit(await serveMcp(file, opts));
    });
}

async function serveMcp(file: string, opts: McpOptions): Promise<number> {
  const fail = (message: string, code: number): number => {
    process.stderr.write(`runtime mcp: ${message}\n`);
    return code;
  };
  const [{ StdioServerTransport }, { teamMcpServer }, { resolveTraceDir }, { sqliteStore }, { readFile }] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/stdio.js"),
    import("../../server/mcp-server.js"),
    import("../../engine/trace-dir.js"),
    import("../../store/sqlite/store.js"),
    import("node:fs/promises"),
  ]);
  const team = await loadTeamOrReport(file, "mcp");
  if (!team) return EXIT.USAGE;
  if (opts.agent !== undefined && !team.agents[opts.agent]) {
    return fail(`unknown agent '${opts.agent}' (agents: ${Object.keys(team.agents).join(", ")})`, EXIT.USAGE);
  }
  const traceDir = resolveTraceDir(opts.traceDir);
  // Held open while the server runs: its runs share it (src/store/sqlite/store.ts).
  const embedded = sqliteStore(traceDir);
  try {
    await embedded.ping();
  } catch (err) {
    return fail(describeError(err), EXIT.USAGE);
  }
  const pkg = JSON.parse(await readFile(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
  const { server, idle } = teamMcpServer(team, { ...(opts.agent !== undefined ? { agent: opts.agent } : {}), traceDir, version: pkg.version });
  const transport = new StdioServerTransport();

  // The client closing stdin (or a signal) ends the server; runs in flight are cancelled by the SDK's close.
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
    process.stdin.once("end", () => void server.close());
    process.stdin.once("close", () => void server.close());
    process.once("SIGINT", () => void server.close());
    process.once("SIGTERM", () => void server.close());
  });
  server.server.onerror = (err) => process.stderr.write(`runtime mcp: ${describeError(err)}\n`);
  await server.connect(transport);
  process.stderr.write(`runtime mcp: serving ${team.name} (${opts.agent ?? Object.keys(team.agents).join(", ")}) on stdio\n`);
  await closed;
  await idle();
  await embedded.close();
  return EXIT.OK;
}
