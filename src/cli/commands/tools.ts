import type { Command } from "commander";
import { redactString } from "../../redact.js";
import { loadTeamOrReport } from "../load-team.js";
import { EXIT, type SetExit } from "../exit.js";

interface ToolsOptions {
  agent?: string;
  json?: boolean;
  traceDir?: string;
}

/**
 * `runtime tools FILE [--agent NAME] [--json]`: the tools each agent's model
 * would be offered, MCP servers' tools included (their servers are started
 * for the listing, then stopped).
 */
export function registerTools(program: Command, setExit: SetExit): void {
  program
    .command("tools")
    .description("list the tools each agent would be offered (starts the team's MCP servers to list theirs, then stops them)")
    .argument("<file>", "team file")
    .option("-a, --agent <name>", "only this agent")
    .option("--json", "print JSON instead of text")
    .option("--trace-dir <dir>", "trace directory, where Plan Tool methods keep their store (default $RUNTIME_TRACE_DIR or .runtime)")
    .action(async (file: string, opts: ToolsOptions) => {
      setExit(await tools(file, opts));
    });
}

async function tools(file: string, opts: ToolsOptions): Promise<number> {
  const [{ listAgentTools }, { teamSecrets }, { resolveTraceDir }, { openStore }] = await Promise.all([
    import("../../engine/list-tools.js"),
    import("../../engine/secrets.js"),
    import("../../engine/trace-dir.js"),
    import("../../store/create.js"),
  ]);
  const team = await loadTeamOrReport(file, "tools");
  if (!team) return EXIT.USAGE;
  if (opts.agent !== undefined && !team.agents[opts.agent]) {
    process.stderr.write(`runtime tools: unknown agent '${opts.agent}' (agents: ${Object.keys(team.agents).join(", ")})\n`);
    return EXIT.USAGE;
  }
  const controller = new AbortController();
  const onSignal = (): void => controller.abort();
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const stores = await openStore(resolveTraceDir(opts.traceDir));
  const listing = await listAgentTools(team, {
    ...(opts.agent !== undefined ? { agents: [opts.agent] } : {}),
    stores,
    signal: controller.signal,
  }).finally(() => stores.close());
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  // A server's error may quote its stderr or a URL: the team's secrets are masked like in events.
  const secrets = teamSecrets(team);
  const mask = (text: string): string => redactString(text, secrets);

  if (opts.json) {
    process.stdout.write(`${mask(JSON.stringify(listing, null, 2))}\n`);
  } else {
    const lines: string[] = [];
    for (const entry of listing) {
      lines.push(`${entry.agent} (${entry.kind})`);
      if (entry.error !== undefined) lines.push(`  error: ${entry.error}`);
      else if (entry.tools.length === 0) lines.push("  (no tools)");
      const width = Math.max(0, ...entry.tools.map((t) => t.name.length));
      for (const tool of entry.tools) {
        const about = tool.source === "kind" ? "provided by the agent's kind, if it has one" : firstLine(tool.description);
        lines.push(`  ${tool.name.padEnd(width)}  [${tool.source}] ${about}`.trimEnd());
        if (tool.schema_problem !== undefined)
          lines.push(`  ${" ".repeat(width)}  warning: its input schema cannot be checked (${tool.schema_problem}); calls will be refused`);
      }
    }
    process.stdout.write(`${mask(lines.join("\n"))}\n`);
  }
  for (const entry of listing) if (entry.error !== undefined) process.stderr.write(`runtime tools: ${mask(entry.error)}\n`);
  return listing.some((entry) => entry.error !== undefined) ? EXIT.RUN_ERROR : EXIT.OK;
}

function firstLine(text: string, max = 120): string {
  const line = text.split("\n")[0]?.trim() ?? "";
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
