/**
 * The scripted model's file format (`version: 1`, `replies: [...]`): its JSON
 * Schema, its loader (through the one YAML loader, `config/yaml-file.ts`,
 * problems as `FILE:LINE:COL PATH MESSAGE`), and a writer used by the recorder.
 */
import { writeFileSync } from "node:fs";
import { MAX_SCRIPT_BYTES } from "../config/references.js";
import { buildStamp } from "../built.js";
import { loadPrecompiled, precompiledSource, SCHEMA_OPTIONS } from "../config/precompiled.js";
import { loadYamlText, readYamlFile, type YamlFileKind } from "../config/yaml-file.js";
import type { ValidateFunction } from "ajv";
import { lazily } from "../lazy.js";
import { ConfigError, type ConfigProblem } from "../errors.js";

// Loaded when a script is first read or written, not with the library.
const yaml = lazily<typeof import("yaml")>("yaml");
const ajv = lazily<typeof import("ajv")>("ajv");

/** A tool call in a script; object arguments are sent JSON-encoded, strings verbatim (even when broken). */
export interface ScriptToolCall {
  id?: string;
  name: string;
  arguments: Record<string, unknown> | string;
}

/** One scripted reply. */
export interface ScriptReply {
  /** Only for requests whose `agent_id` is this. */
  agent?: string;
  /** A regex the last user message must match. */
  match?: string;
  content?: string | null;
  tool_calls?: ScriptToolCall[];
  /** Missing fields are estimated (chars / 4). */
  usage?: { prompt_tokens?: number; completion_tokens?: number };
  /** @default 0 */
  delay_ms?: number;
}

export interface Script {
  version: 1;
  replies: ScriptReply[];
}

/** A loaded script with each `match` compiled once. */
export interface LoadedScript extends Script {
  file: string;
  patterns: (RegExp | undefined)[];
}

/** JSON Schema of a script file. */
export const scriptSchema = {
  $id: "https://yaml-agent-runtime.dev/schemas/model-script.schema.json",
  type: "object",
  additionalProperties: false,
  required: ["version", "replies"],
  properties: {
    version: { const: 1 },
    replies: {
      type: "array",
      items: {
        type: "object",
        additionalProperties: false,
        properties: {
          agent: { type: "string", minLength: 1 },
          match: { type: "string" },
          content: { type: ["string", "null"] },
          tool_calls: {
            type: "array",
            items: {
              type: "object",
              additionalProperties: false,
              required: ["name", "arguments"],
              properties: {
                id: { type: "string", minLength: 1 },
                name: { type: "string", minLength: 1 },
                arguments: { type: ["object", "string"] },
              },
            },
          },
          usage: {
            type: "object",
            additionalProperties: false,
            properties: {
              prompt_tokens: { type: "integer", minimum: 0 },
              completion_tokens: { type: "integer", minimum: 0 },
            },
          },
          delay_ms: { type: "integer", minimum: 0 },
        },
      },
    },
  },
} as const;

/** Where `npm run build` writes the script validator as code (beside this module in dist/). */
export const SCRIPT_VALIDATOR_URL = new URL("./script-validator.cjs", import.meta.url);

/** ajv's options for scripts: those of every YAML file; the (fixed, tested) schema is not checked against the meta-schema. */
const OPTIONS = { ...SCHEMA_OPTIONS, validateSchema: false, code: { optimize: false } } as const;

const stamp = () => buildStamp(JSON.stringify(scriptSchema), JSON.stringify(OPTIONS));

let compiled: ValidateFunction<Script> | undefined;
/**
 * The script validator: the one the build wrote (`validate` and `exec` of a
 * scripted team then load none of ajv's compiler, docs/design/engine.md#start-up),
 * else compiled on first use.
 */
function scriptValidator(): ValidateFunction<Script> {
  compiled ??= loadPrecompiled<ValidateFunction<Script>>(SCRIPT_VALIDATOR_URL, stamp()) ?? new (ajv().Ajv)(OPTIONS).compile<Script>(scriptSchema);
  return compiled;
}

/** The validator as the source of a CommonJS module: what `scripts/precompile-validators.mjs` writes to SCRIPT_VALIDATOR_URL. */
export function scriptValidatorSource(): string {
  const compiler = new (ajv().Ajv)({ ...OPTIONS, code: { ...OPTIONS.code, source: true } });
  return precompiledSource(compiler, compiler.compile(scriptSchema), stamp(), "the script schema of src/models/script-format.ts");
}

/** What a script is to the YAML loader (`config/yaml-file.ts`); its problems say they are the scripted model's. */
const SCRIPT_FILE: YamlFileKind = {
  noun: "a script",
  expected: "a mapping with version and replies",
  maxBytes: MAX_SCRIPT_BYTES,
  prefix: "scripted model: ",
  schema: { validate: scriptValidator, words: { name: "the script schema" } },
};

/** Reads and validates a script; any problem throws a ConfigError naming the file. */
export function loadScript(file: string): LoadedScript {
  return parseScript(readYamlFile(file, SCRIPT_FILE), file);
}

/** Parses script text; `file` is only used in messages. */
export function parseScript(text: string, file: string): LoadedScript {
  const { value: script, source } = loadYamlText<Script>(text, file, SCRIPT_FILE);
  const problems: ConfigProblem[] = [];
  const patterns = script.replies.map((reply, i) => {
    if (reply.match === undefined) return undefined;
    try {
      return new RegExp(reply.match);
    } catch (err) {
      problems.push(source.problem(`/replies/${i}/match`, `scripted model: invalid regex: ${(err as Error).message}`));
      return undefined;
    }
  });
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...script, file, patterns };
}

/** Writes replies in the script format, readable back by `loadScript`. */
export function writeScript(file: string, replies: ScriptReply[]): void {
  const header = "# Recorded by `runtime exec --record`; replay with a model of provider: scripted.\n";
  writeFileSync(file, header + yaml().stringify({ version: 1, replies } satisfies Script, { lineWidth: 0 }), "utf8");
}
