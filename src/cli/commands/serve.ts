import type { Command } from "commander";
import { describeError } from "../../errors.js";
import { loadTeamOrReport } from "../load-team.js";
import { EXIT, type SetExit } from "../exit.js";

interface ServeOptions {
  port: string;
  host: string;
  traceDir?: string;
  corsOrigin?: string;
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

  // The engine and the server are loaded only when this command runs, so `runtime --help` starts fast.
  const { startServer } = await import("../../server/server.js");
  const team = await loadTeamOrReport(file, "serve");
  if (!team) return EXIT.USAGE;

  let server;
  try {
    server = await startServer({
      team,
      port,
      host: opts.host,
      ...(opts.traceDir !== undefined ? { traceDir: opts.traceDir } : {}),
      ...(opts.corsOrigin !== undefined ? { corsOrigin: opts.corsOrigin } : {}),
    });
  } catch (err) {
    return fail(describeError(err), EXIT.RUN_ERROR);
  }
  process.stderr.write(`runtime serve: ${team.name} listening on ${server.url}/ (Ctrl-C to stop)\n`);

  // Stopping cancels the runs in progress; each keeps its trace, ending with run.finished.
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  process.stderr.write("runtime serve: stopping\n");
  await server.close();
  return EXIT.OK;
}
