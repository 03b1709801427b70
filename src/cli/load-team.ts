import type { ResolvedTeam } from "../config/types.js";
import { ConfigError, describeError, formatProblem } from "../errors.js";

/**
 * Load a team file for a command: every problem on stderr as
 * `FILE:LINE:COL PATH MESSAGE` (or one line for anything else), and
 * `undefined` so the command exits with status 2. The loader is imported
 * only here, when a command needs it, so `runtime --help` starts fast.
 */
export async function loadTeamOrReport(file: string, command: string): Promise<ResolvedTeam | undefined> {
  const { loadTeam } = await import("../config/load.js");
  try {
    return await loadTeam(file);
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(`${formatProblem(p)}\n`);
    } else {
      process.stderr.write(`runtime ${command}: ${describeError(err)}\n`);
    }
    return undefined;
  }
}
