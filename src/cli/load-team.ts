import { pointerSegment } from "../config/source.js";
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
 * `modules`: import the team's tool modules and its flows' parser modules
 * and check what they export (`runtime validate`; a run imports them only
 * when it needs them).
 */
export async function loadCheckedTeam(file: string, options: { modules?: boolean } = {}): Promise<ResolvedTeam> {
  const [{ loadTeam }, { problemAt }, { loadScript }] = await Promise.all([
    import("../config/load.js"),
    import("../config/yaml-file.js"),
    import("../models/script-format.js"),
  ]);
  const team = await loadTeam(file);
  const problems: ConfigProblem[] = [];
  if (options.modules) {
    const { loadToolModule } = await import("../tools/module.js");
    for (const tool of Object.values(team.tools)) {
      if (tool.type !== "module") continue;
      try {
        await loadToolModule(tool.module);
      } catch (err) {
        problems.push(problemAt(file, `/tools/${pointerSegment(tool.name)}/module`, describeError(err)));
      }
    }
    const { loadParser } = await import("../kinds/plan-and-solve-flow/parser.js");
    for (const agent of Object.values(team.agents)) {
      if (agent.kind !== "plan_and_solve_flow" || agent.parser === undefined) continue;
      try {
        await loadParser(agent.parser);
      } catch (err) {
        problems.push(await problemAt(file, `/agents/${pointerSegment(agent.name)}/parser`, describeError(err)));
      }
    }
  }
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
