/**
 * The scripted model's file format (`version: 1`, `replies: [...]`): its JSON
 * Schema, a loader that reports problems as `FILE:LINE:COL PATH MESSAGE`, and
 * a writer used by the recorder.
 */
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { MAX_SCRIPT_BYTES } from "../config/references.js";
import { buildStamp } from "../built.js";
import { loadPrecompiled, precompiledSource } from "../config/precompiled.js";
import type { ErrorObject, ValidateFunction } from "ajv";
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

/** ajv's options for scripts: strict, every error; the (fixed, tested) schema is not checked against the meta-schema. */
const OPTIONS = { strict: true, allErrors: true, allowUnionTypes: true, validateSchema: false, code: { optimize: false } } as const;

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

/** Reads and validates a script; any problem throws a ConfigError naming the file. */
export function loadScript(file: string): LoadedScript {
  let text: string;
  try {
    const bytes = statSync(file).size;
    if (bytes > MAX_SCRIPT_BYTES) {
      throw new ConfigError([
        { file, line: 1, col: 1, path: "", message: `scripted model: the script is ${bytes} bytes; at most ${MAX_SCRIPT_BYTES} are read` },
      ]);
    }
    text = readFileSync(file, "utf8");
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const reason = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ConfigError([{ file, line: 1, col: 1, path: "", message: `scripted model: cannot read the script (${reason})` }]);
  }
  return parseScript(text, file);
}

/** Parses script text; `file` is only used in messages. */
export function parseScript(text: string, file: string): LoadedScript {
  const { LineCounter, parseDocument, isNode } = yaml();
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { uniqueKeys: true, lineCounter, prettyErrors: false });
  const at = (offset: number | undefined) => {
    const pos = lineCounter.linePos(offset ?? 0);
    return { line: pos.line, col: pos.col };
  };
  if (doc.errors.length > 0) {
    throw new ConfigError(doc.errors.map((e) => ({ file, ...at(e.pos[0]), path: "", message: e.message.split("\n")[0] ?? "YAML error" })));
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    throw new ConfigError([{ file, line: 1, col: 1, path: "", message: (err as Error).message.split("\n")[0] ?? "YAML error" }]);
  }
  const problems: ConfigProblem[] = [];
  const locate = (path: (string | number)[]) => {
    const node = doc.getIn(path, true);
    return at(isNode(node) ? node.range?.[0] : undefined);
  };
  for (const path of forbiddenKeys(value, [])) {
    problems.push({ file, ...locate(path.slice(0, -1)), path: pointer(path), message: "key is not allowed" });
  }
  const validate = scriptValidator();
  if (problems.length === 0 && !validate(value)) {
    for (const e of validate.errors ?? []) problems.push(toProblem(file, e, locate));
  }
  if (problems.length > 0) throw new ConfigError(problems);

  const script = value as Script;
  const patterns = script.replies.map((reply, i) => {
    if (reply.match === undefined) return undefined;
    try {
      return new RegExp(reply.match);
    } catch (err) {
      problems.push({ file, ...locate(["replies", i, "match"]), path: `/replies/${i}/match`, message: `invalid regex: ${(err as Error).message}` });
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

function toProblem(file: string, e: ErrorObject, locate: (path: (string | number)[]) => { line: number; col: number }): ConfigProblem {
  const path = e.instancePath
    .split("/")
    .slice(1)
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p.replace(/~1/g, "/").replace(/~0/g, "~")));
  let message = `${e.message ?? "is invalid"}`;
  if (e.keyword === "additionalProperties") message = `unknown key "${String(e.params["additionalProperty"])}"`;
  if (e.keyword === "const") message = `must be ${JSON.stringify(e.params["allowedValue"])}`;
  return { file, ...locate(path), path: e.instancePath, message: `scripted model: ${message}` };
}

/** Keys that could reach an object's prototype are refused, wherever they appear. */
function forbiddenKeys(value: unknown, path: (string | number)[]): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => forbiddenKeys(v, [...path, i]));
  if (value === null || typeof value !== "object") return [];
  return Object.keys(value).flatMap((k) =>
    k === "__proto__" || k === "constructor" || k === "prototype" ? [[...path, k]] : forbiddenKeys((value as Record<string, unknown>)[k], [...path, k]),
  );
}

function pointer(path: (string | number)[]): string {
  return path.map((p) => `/${String(p).replace(/~/g, "~0").replace(/\//g, "~1")}`).join("");
}
