import type { ResolvedTeam } from "../config/types.js";
import { ConfigError, describeError, formatProblem, type ConfigProblem } from "../errors.js";

/**
 * Load a team file for a command: every problem on stderr as
 * `FILE:LINE:COL PATH MESSAGE` (or one line for anything else), and
 * `undefined` so the command exits with status 2. The loader is imported
 * only here, when a command needs it, so `runtime --help` starts fast.
 */
export async function loadTeamOrReport(file: string, command: string): Promise<ResolvedTeam | undefined> {
  try {
    return await loadCheckedTeam(file);
  } catch (err) {
    if (err instanceof ConfigError) {
      for (const p of err.problems) process.stderr.write(`${formatProblem(p)}\n`);
    } else {
      process.stderr.write(`runtime ${command}: ${describeError(err)}\n`);
    }
    return undefined;
  }
}

/**
 * `loadTeam`, plus the scripts of the team's scripted models: a broken script
 * is a mistake in the configuration (exit 2, located in the script), not a
 * run that fails halfway. The loader itself knows nothing of models.
 */
export async function loadCheckedTeam(file: string): Promise<ResolvedTeam> {
  const [{ loadTeam }, { loadScript }] = await Promise.all([import("../config/load.js"), import("../models/script-format.js")]);
  const team = await loadTeam(file);
  const problems: ConfigProblem[] = [];
  for (const model of Object.values(team.models)) {
    if (model.provider !== "scripted") continue;
    try {
      loadScript(model.script);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(...err.problems);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return team;
}
