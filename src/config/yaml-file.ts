/**
 * One door for the YAML files the runtime reads: team files, agent test
 * files, tokens files, model scripts (and a skill's front matter next).
 * Each is read with a size limit, parsed by `parse.ts` (binary data,
 * nesting, aliases, duplicate and prototype keys, YAML 1.2 strict),
 * validated by a strict ajv validator whose errors `schemaProblems`
 * (`validate.ts`) says in words; every problem is located as
 * `FILE:LINE:COL /pointer message`, and they are thrown together as one
 * ConfigError (docs/testing.md, docs/security.md).
 */
import { readFileSync, statSync } from "node:fs";
import type { ValidateFunction } from "ajv";
import { ConfigError, describeError, type ConfigProblem } from "../errors.js";
import type { Env } from "./interpolate.js";
import { MAX_FILE_BYTES, parseYamlText, tooLarge, type Parsed } from "./parse.js";
import type { SourceMap } from "./source.js";
import { schemaProblems, type SchemaWords } from "./validate.js";

/** A kind of YAML file: what messages call it and what it must hold. */
export interface YamlFileKind {
  /** The file, as messages name it: "a tokens file". */
  noun: string;
  /** What the top level must be, as messages say it: "a mapping with version, team and cases". */
  expected: string;
  /** The top level is a list, not a mapping. @default false */
  list?: boolean;
  /** @default 1 MB */
  maxBytes?: number;
  /** Where `${VAR}` values come from; none: the text is taken as written. */
  env?: Env;
  /** Said before every message (a file one reads through another: "scripted model: "). @default "" */
  prefix?: string;
  /** Its schema: a strict ajv validator, and the words of its errors. */
  schema?: { validate: () => ValidateFunction; words: SchemaWords };
}

/** The text of a YAML file, read only when within its size; every failure one located ConfigError. */
export function readYamlFile(file: string, kind: YamlFileKind): string {
  const fail = (message: string): never => {
    throw new ConfigError(prefixed([{ file, line: 1, col: 1, path: "", message }], kind));
  };
  const maxBytes = kind.maxBytes ?? MAX_FILE_BYTES;
  try {
    const info = statSync(file);
    if (!info.isFile()) return fail("not a file");
    // Refuse before reading: a huge file should cost nothing.
    if (info.size > maxBytes) return fail(tooLarge(info.size, kind.noun, maxBytes));
    return readFileSync(file, "utf8");
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    return fail(code === "ENOENT" ? "file not found" : `cannot read file: ${describeError(err)}`);
  }
}

/** YAML text parsed as `kind`; problems are returned (the team loader reports them with its own). */
export function parseYaml(text: string, file: string, kind: YamlFileKind): Parsed {
  const parsed = parseYamlText(text.replace(/^\uFEFF/, ""), file, kind.env ?? {}, {
    noun: kind.noun,
    expected: kind.expected,
    interpolate: kind.env !== undefined,
    ...(kind.list ? { list: true } : {}),
    ...(kind.maxBytes ? { maxBytes: kind.maxBytes } : {}),
  });
  return { ...parsed, problems: prefixed(parsed.problems, kind) };
}

/** A file of `kind`, read, parsed and checked against its schema; throws a ConfigError listing every problem. */
export function loadYamlFile<T>(file: string, kind: YamlFileKind): { value: T; source: SourceMap } {
  return loadYamlText<T>(readYamlFile(file, kind), file, kind);
}

/** `loadYamlFile` of text; `file` names it in problems. */
export function loadYamlText<T>(text: string, file: string, kind: YamlFileKind): { value: T; source: SourceMap } {
  const { value, source, problems } = parseYaml(text, file, kind);
  if (problems.length > 0) throw new ConfigError(problems);
  if (kind.schema) {
    const invalid = schemaProblems(kind.schema.validate(), value, source, kind.schema.words);
    // In the order of the file, as the team loader says them.
    if (invalid.length > 0) throw new ConfigError(prefixed(invalid, kind).sort((a, b) => a.line - b.line || a.col - b.col));
  }
  return { value: value as T, source };
}

/**
 * A problem at `pointer` of the YAML file `file`, located by line and column:
 * for checks made after loading (a tool module's exports, a test's agent).
 */
export function problemAt(file: string, pointer: string, message: string): ConfigProblem {
  try {
    const text = readFileSync(file, "utf8").replace(/^\uFEFF/, "");
    return parseYamlText(text, file, {}, { interpolate: false }).source.problem(pointer, message);
  } catch {
    return { file, line: 1, col: 1, path: pointer, message };
  }
}

function prefixed(problems: ConfigProblem[], kind: YamlFileKind): ConfigProblem[] {
  return kind.prefix ? problems.map((p) => ({ ...p, message: `${kind.prefix}${p.message}` })) : problems;
}
