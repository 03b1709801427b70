/**
 * `loadTeam`: a team file in, a fully resolved team out, or a ConfigError
 * listing every problem with its file, line, column and JSON pointer.
 */
import { dirname, resolve } from "node:path";
import { ConfigError, type ConfigProblem } from "../errors.js";
import type { Env } from "./interpolate.js";
import type { UnsetVariable } from "./parse.js";
import { parseYaml, readYamlFile } from "./yaml-file.js";
import { isRecord } from "./raw.js";
import { agencyWarnings } from "./agency.js";
import { pointerSegment, type SourceMap } from "./source.js";
import { checkReferences, type References } from "./references.js";
import { resolveTeam } from "./resolve.js";
import type { ResolvedTeam } from "./types.js";
import { validateAgainstSchema } from "./validate.js";
import { isSecretKey, redactString } from "../redact.js";

export interface LoadOptions {
  /** Where `${VAR}` values come from. @default process.env */
  env?: Env;
  /**
   * Tools the application will give `runTeam` (`RunOptions.tools`), or just
   * their names: agents may list them in `tools` (docs/code-tools.md).
   * @default none
   */
  tools?: ReadonlyArray<string | { readonly name: string }>;
}

/** What a team file is to the YAML loader (`yaml-file.ts`); validated below, with its references. */
const TEAM_FILE = { noun: "a team file", expected: "a mapping with version, name, models and agents" } as const;

/** Load, validate and resolve the team file at `path`. */
export async function loadTeam(path: string, options: LoadOptions = {}): Promise<ResolvedTeam> {
  return loadTeamFromString(readYamlFile(path, TEAM_FILE), path, options);
}

/**
 * Load a team from its text; `file` names it in problems and anchors relative
 * paths (its directory).
 */
export async function loadTeamFromString(text: string, file: string, options: LoadOptions = {}): Promise<ResolvedTeam> {
  const env = options.env ?? process.env;
  const absolute = resolve(file);
  const dir = dirname(absolute);
  const parsed = parseYaml(text, file, { ...TEAM_FILE, env });
  const secrets = interpolatedSecrets(text, env);
  if (parsed.problems.length > 0 || !isRecord(parsed.value)) throw new ConfigError(sorted(parsed.problems, secrets));

  // ajv fills defaults into what it validates: give it a copy. The reference
  // checks read it even when it is invalid, to report every problem at once.
  const team = structuredClone(parsed.value);
  const { team: valid, problems } = validateAgainstSchema(team, parsed.source);
  const provided = new Set((options.tools ?? []).map((t) => (typeof t === "string" ? t : t.name)));
  const { problems: referenceProblems, refs } = checkReferences(team, dir, parsed.source, provided);
  problems.push(...referenceProblems);
  for (const unset of parsed.unset) {
    if (!isNeeded(unset, refs)) continue;
    const message = `environment variable ${unset.name} is not set (write \${${unset.name}:-default} to give a fallback)`;
    problems.push(parsed.source.problem(unset.pointer, message));
  }
  problems.push(...(await promptProblems(team, refs, parsed.source)));
  if (problems.length > 0 || valid === undefined) throw new ConfigError(sorted(problems, secrets));
  const resolved = resolveTeam(valid, absolute, dir, refs);
  // The file as written (no defaults filled in), for what it says and what it leaves out.
  const written = parsed.value as Record<string, unknown>;
  const warnings = [...promptWarnings(team, refs, parsed.source), ...agencyWarnings(resolved, written, text, parsed.source)];
  return warnings.length > 0 ? { ...resolved, warnings: sorted(warnings, secrets) } : resolved;
}

/**
 * A react agent's own prompt without `{{current_state}}`: it loads, but the
 * model never sees the plan, the tool results or the errors to repair
 * (docs/design/kinds.md), so every recursion starts blind.
 */
function promptWarnings(team: Record<string, unknown>, refs: References, source: SourceMap): ConfigProblem[] {
  const out: ConfigProblem[] = [];
  for (const [name, agent] of Object.entries(isRecord(team.agents) ? team.agents : {})) {
    if (!isRecord(agent) || agent.kind !== "react") continue;
    const text = typeof agent.prompt === "string" ? agent.prompt : refs.prompts.get(name);
    if (text === undefined || /\{\{\{?\s*current_state\s*\}/.test(text)) continue;
    const key = typeof agent.prompt === "string" ? "prompt" : "system_prompt";
    out.push(
      source.problem(
        `/agents/${pointerSegment(name)}/${key}`,
        "warning: this react prompt has no {{current_state}}: the model will not see its plan, tool results or errors; add {{current_state}} where they belong",
      ),
    );
  }
  return out;
}

/** Prompts (inline or from a file) that Handlebars cannot use, at the key that gives them. */
async function promptProblems(team: Record<string, unknown>, refs: References, source: SourceMap): Promise<ConfigProblem[]> {
  const texts: Array<[pointer: string, text: string]> = [];
  for (const [name, agent] of Object.entries(isRecord(team.agents) ? team.agents : {})) {
    const at = `/agents/${pointerSegment(name)}`;
    if (isRecord(agent) && typeof agent.prompt === "string") texts.push([`${at}/prompt`, agent.prompt]);
    const file = refs.prompts.get(name);
    if (file !== undefined) texts.push([`${at}/system_prompt`, file]);
  }
  if (texts.length === 0) return [];
  // Handlebars is loaded only for teams that bring their own prompts.
  const { templateProblem } = await import("../prompts/render.js");
  return texts.flatMap(([pointer, text]) => {
    const problem = templateProblem(text);
    return problem === undefined ? [] : [source.problem(pointer, `invalid Handlebars template: ${problem}`)];
  });
}

/**
 * The values of secret-named variables the file interpolates (`${SERVICE_API_KEY}`),
 * masked in every problem: a secret written in the wrong place is quoted by none.
 */
function interpolatedSecrets(text: string, env: Env): string[] {
  const names = new Set([...text.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!));
  return [...names].filter(isSecretKey).flatMap((name) => (env[name] ? [env[name]!] : []));
}

/** An unset variable only matters in a model or tool some agent uses. */
function isNeeded(unset: UnsetVariable, refs: References): boolean {
  const [, section, name] = unset.pointer.split("/");
  if (section === "models") return refs.usedModels.has(name ?? "");
  if (section === "tools") return refs.usedTools.has(name ?? "");
  return true;
}

/** Most problems reported for one file; a note says how many more there are. */
export const MAX_REPORTED_PROBLEMS = 100;

function sorted(problems: ConfigProblem[], secrets: readonly string[]): ConfigProblem[] {
  problems = problems.map((p) => ({ ...p, message: redactString(p.message, secrets) }));
  const all = [...problems].sort((a, b) => a.line - b.line || a.col - b.col || a.path.localeCompare(b.path));
  if (all.length <= MAX_REPORTED_PROBLEMS) return all;
  const shown = all.slice(0, MAX_REPORTED_PROBLEMS);
  const last = shown[shown.length - 1]!;
  const more = all.length - shown.length;
  return [...shown, { ...last, path: "", message: `${more} more problem${more === 1 ? "" : "s"} not shown` }];
}
