/**
 * The tokens file of `runtime serve --tokens FILE` (docs/server.md#authentication):
 * a YAML list of callers, `{name, token_sha256 | token_env, scopes,
 * runs_max?, rate?}`. The file holds no token: its SHA-256, or the name of
 * the variable that holds it; a plain `token:` is refused.
 */
import type { ValidateFunction } from "ajv";
import { SCHEMA_OPTIONS } from "../config/precompiled.js";
import { ajvPackage } from "../config/tool-parameters.js";
import type { Env } from "../config/interpolate.js";
import { schemaProblems, type SchemaWords } from "../config/validate.js";
import { parseYaml, readYamlFile, type YamlFileKind } from "../config/yaml-file.js";
import { ConfigError, type ConfigProblem } from "../errors.js";
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

/** What a tokens file is to the YAML loader (`config/yaml-file.ts`). */
const TOKENS_FILE: YamlFileKind = { noun: "a tokens file", expected: "a list of callers ({name, token_sha256 or token_env, scopes})", list: true };

/** Read a tokens file; every problem throws one ConfigError naming FILE:LINE:COL. `env` holds the `token_env` variables. */
export function loadTokensFile(file: string, env: Env = process.env): CallerEntry[] {
  return parseTokens(readYamlFile(file, TOKENS_FILE), file, env);
}

/** A tokens file's text as callers; `file` names it in problems. */
export function parseTokens(text: string, file: string, env: Env): CallerEntry[] {
  const parsed = parseYaml(text, file, TOKENS_FILE);
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
  validator ??= new (ajvPackage().Ajv)(SCHEMA_OPTIONS).compile(TOKENS_SCHEMA);
  const invalid = schemaProblems(validator, items, source, TOKENS_WORDS);
  if (invalid.length > 0) throw new ConfigError(invalid);
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

/** The tokens file's own words: its scopes, and what its patterns are for. */
const TOKENS_WORDS: SchemaWords = {
  name: "the tokens file's schema",
  special(error, source) {
    const here = error.instancePath;
    if (error.keyword === "enum") return source.problem(here, `unknown scope ${JSON.stringify(error.data)}: expected one of ${SCOPES.join(", ")}`);
    if (error.keyword !== "pattern") return undefined;
    if (here.endsWith("token_sha256")) return source.problem(here, "token_sha256 must be 64 hex digits (printf %s TOKEN | sha256sum)");
    if (here.endsWith("name")) return source.problem(here, "a name is 1-64 letters, digits, '_', '.', '@', '-', starting with a letter or digit");
    return source.problem(here, "a variable name is letters, digits and '_'");
  },
};
