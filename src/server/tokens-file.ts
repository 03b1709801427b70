/**
 * The tokens file of `runtime serve --tokens FILE` (docs/server.md#authentication):
 * a YAML list of callers, `{name, token_sha256 | token_env, scopes,
 * runs_max?, rate?}`. The file holds no token: its SHA-256, or the name of
 * the variable that holds it; a plain `token:` is refused.
 */
import { readFileSync, statSync } from "node:fs";
import type { ErrorObject, ValidateFunction } from "ajv";
import { parseTeamText, MAX_FILE_BYTES } from "../config/parse.js";
import { ajvPackage } from "../config/tool-parameters.js";
import type { Env } from "../config/interpolate.js";
import { ConfigError, type ConfigProblem, describeError } from "../errors.js";
import { pointerSegment, type SourceMap } from "../config/source.js";
import { SCOPES, sha256, type CallerEntry, type Scope } from "./auth.js";

/** Shortest token accepted, as `--token` (src/cli/commands/serve.ts). */
const MIN_TOKEN_LENGTH = 16;

const TOKENS_SCHEMA = {
  type: "array",
  minItems: 1,
  items: {
    type: "object",
    additionalProperties: false,
    required: ["name", "scopes"],
    properties: {
      name: { type: "string", pattern: "^[A-Za-z0-9][\\w.@-]{0,63}$" },
      token_sha256: { type: "string", pattern: "^[0-9a-fA-F]{64}$" },
      token_env: { type: "string", pattern: "^[A-Za-z_][A-Za-z0-9_]*$" },
      scopes: { type: "array", minItems: 1, uniqueItems: true, items: { enum: [...SCOPES] } },
      runs_max: { type: "integer", minimum: 1 },
      rate: { type: "number", exclusiveMinimum: 0 },
    },
  },
} as const;

interface RawCaller {
  name: string;
  token_sha256?: string;
  token_env?: string;
  scopes: Scope[];
  runs_max?: number;
  rate?: number;
}

let validator: ValidateFunction | undefined;

/** Read a tokens file; every problem throws one ConfigError naming FILE:LINE:COL. `env` holds the `token_env` variables. */
export function loadTokensFile(file: string, env: Env = process.env): CallerEntry[] {
  const fail = (why: string) => new ConfigError([{ file, line: 1, col: 1, path: "", message: `cannot read the tokens file: ${why}` }]);
  let text: string | undefined;
  try {
    // A file past the team file's limit is not read at all.
    if (statSync(file).size <= MAX_FILE_BYTES) text = readFileSync(file, "utf8");
  } catch (err) {
    throw fail(describeError(err));
  }
  if (text === undefined) throw fail("it is larger than 1 MB");
  return parseTokens(text, file, env);
}

/** A tokens file's text as callers; `file` names it in problems. */
export function parseTokens(text: string, file: string, env: Env): CallerEntry[] {
  const parsed = parseTeamText(
    text.replace(/^\uFEFF/, ""),
    file,
    {},
    {
      interpolate: false,
      list: true,
      expected: "a list of callers ({name, token_sha256 or token_env, scopes})",
    },
  );
  if (parsed.problems.length > 0) throw new ConfigError(parsed.problems);
  const { source } = parsed;
  const items = parsed.value as unknown[];
  // A token written in the file would sit in backups and version control: refused before anything else is said.
  const plain = items.flatMap((item, i) => (item !== null && typeof item === "object" && "token" in item ? [i] : []));
  if (plain.length > 0) {
    throw new ConfigError(
      plain.map((i) =>
        source.problem(
          `/${i}/token`,
          "a token written in the file is refused: give its token_sha256 (printf %s TOKEN | sha256sum) or token_env (a variable that holds it)",
          "key",
        ),
      ),
    );
  }
  validator ??= new (ajvPackage().Ajv)({ strict: true, allErrors: true, verbose: true }).compile(TOKENS_SCHEMA);
  if (!validator(items)) throw new ConfigError(schemaProblems(validator.errors ?? [], source));
  const problems: ConfigProblem[] = [];
  const seen = new Set<string>();
  const callers = (items as RawCaller[]).map((raw, i): CallerEntry => {
    if (seen.has(raw.name)) problems.push(source.problem(`/${i}/name`, `duplicate caller name '${raw.name}': each caller is named once`));
    seen.add(raw.name);
    let digest: Buffer;
    if ((raw.token_sha256 === undefined) === (raw.token_env === undefined)) {
      problems.push(source.problem(`/${i}`, "give exactly one of token_sha256 (the token's SHA-256, in hex) and token_env (a variable that holds it)"));
      digest = Buffer.alloc(0);
    } else if (raw.token_sha256 !== undefined) digest = Buffer.from(raw.token_sha256, "hex");
    else {
      const token = env[raw.token_env!] ?? "";
      if (token.length < MIN_TOKEN_LENGTH) {
        const why = token ? `holds fewer than ${MIN_TOKEN_LENGTH} characters` : "is not set";
        problems.push(source.problem(`/${i}/token_env`, `the variable ${raw.token_env} ${why}: it must hold the caller's token`));
      }
      digest = sha256(token);
    }
    return {
      name: raw.name,
      scopes: new Set(raw.scopes),
      digest,
      ...(raw.runs_max !== undefined ? { runsMax: raw.runs_max } : {}),
      ...(raw.rate !== undefined ? { rate: raw.rate } : {}),
    };
  });
  const digests = new Set(callers.map((c) => c.digest.toString("hex")));
  if (digests.size < callers.length) problems.push(source.problem("", "two callers have the same token: give each caller its own"));
  if (problems.length > 0) throw new ConfigError(problems);
  return callers;
}

const KEYS = Object.keys(TOKENS_SCHEMA.items.properties).join(", ");

function schemaProblems(errors: readonly ErrorObject[], source: SourceMap): ConfigProblem[] {
  const problems = new Map<string, ConfigProblem>();
  for (const error of errors) {
    const here = error.instancePath;
    const params = error.params as Record<string, unknown>;
    let problem: ConfigProblem;
    switch (error.keyword) {
      case "additionalProperties": {
        const key = String(params.additionalProperty);
        problem = source.problem(`${here}/${pointerSegment(key)}`, `unknown key '${key}'; expected one of ${KEYS}`, "key");
        break;
      }
      case "required":
        problem = source.problem(here, `missing required key '${String(params.missingProperty)}'`);
        break;
      case "enum":
        problem = source.problem(here, `unknown scope ${JSON.stringify(error.data)}: expected one of ${SCOPES.join(", ")}`);
        break;
      case "pattern":
        problem = source.problem(
          here,
          /token_sha256$/.test(here)
            ? "token_sha256 must be 64 hex digits (printf %s TOKEN | sha256sum)"
            : /name$/.test(here)
              ? "a name is 1-64 letters, digits, '_', '.', '@', '-', starting with a letter or digit"
              : "a variable name is letters, digits and '_'",
        );
        break;
      default:
        problem = source.problem(here, error.message ?? "does not match the tokens file's schema");
    }
    problems.set(`${problem.path}\u0000${problem.message}`, problem);
  }
  return [...problems.values()];
}
