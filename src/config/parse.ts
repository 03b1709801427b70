/**
 * YAML text → plain JSON-like value, with a source map, defensively: size,
 * binary data, nesting, aliases and prototype keys are checked here, so that
 * nothing hostile reaches the validator or the heap.
 */
import type { Alias, Document, Node } from "yaml";
import { lazily } from "../lazy.js";
import type { ConfigProblem } from "../errors.js";
import { interpolate, type Env } from "./interpolate.js";
import { pointerSegment, SourceMap } from "./source.js";

// Loaded when a first team file is parsed, not with the library.
const yaml = lazily<typeof import("yaml")>("yaml");

/** Largest YAML file accepted, in bytes, unless its kind says otherwise (a model script). */
export const MAX_FILE_BYTES = 1024 * 1024;
/** Deepest nesting of mappings and sequences accepted. */
export const MAX_DEPTH = 64;
/** Most alias dereferences accepted in one file (an alias bomb needs many). */
export const MAX_ALIASES = 100;
/** Most nodes the parsed value may hold, aliases expanded. */
const MAX_NODES = 200_000;

const FORBIDDEN_KEYS = new Set(["__proto__", "constructor", "prototype"]);

/** A `${VAR}` without default whose variable is unset; whether that is an error depends on use. */
export interface UnsetVariable {
  pointer: string;
  name: string;
}

/** The parsed value, where each pointer lives in the source, and what went wrong. */
export interface Parsed {
  value: unknown;
  source: SourceMap;
  problems: ConfigProblem[];
  unset: UnsetVariable[];
}

/** How `parseYamlText` reads a file other than a team file (`yaml-file.ts`). */
export interface ParseOptions {
  /** The file, as messages name it. @default "a team file" */
  noun?: string;
  /** @default MAX_FILE_BYTES */
  maxBytes?: number;
  /** Replace `${VAR}` from `env`. @default true */
  interpolate?: boolean;
  /** What the top level must be, as messages say it. @default "a mapping with version, name, models and agents" */
  expected?: string;
  /** The top level is a list, not a mapping (a tokens file, docs/server.md#authentication). @default false */
  list?: boolean;
}

/** Parse YAML text (a team file's unless `options` say otherwise). Problems are returned, never thrown. */
export function parseYamlText(text: string, file: string, env: Env, options: ParseOptions = {}): Parsed {
  const expected = options.expected ?? "a mapping with version, name, models and agents";
  const lines = new (yaml().LineCounter)();
  const source = new SourceMap(file, lines);
  const early = precheck(text, file, options.noun ?? "a team file", options.maxBytes ?? MAX_FILE_BYTES);
  if (early) return { value: undefined, source, problems: [early], unset: [] };

  let doc: Document;
  try {
    doc = yaml().parseDocument(text, {
      lineCounter: lines,
      // Duplicate keys are found while walking, where their JSON pointer is known.
      uniqueKeys: false,
      prettyErrors: false,
      strict: true,
      version: "1.2",
    });
  } catch (err) {
    // The parser recurses per level; a shape precheck did not foresee still ends in one clear line.
    if (!(err instanceof RangeError)) throw err;
    return { value: undefined, source, problems: [{ file, line: 1, col: 1, path: "", message: `nesting deeper than ${MAX_DEPTH} levels` }], unset: [] };
  }
  const problems: ConfigProblem[] = [];
  // After the first syntax error the parser's view of the rest is a guess:
  // later errors are mostly echoes of the first, so only that one is reported.
  const error = doc.errors[0] ?? doc.warnings[0];
  if (error) {
    const { line, col } = lines.linePos(error.pos[0]);
    let message = yamlMessage(error.message);
    // `{ api_key: ${KEY} }`: the `{` of the variable opens a flow mapping, which YAML reports cryptically.
    const lineText = text.slice(lines.lineStarts[line - 1] ?? 0, lines.lineStarts[line] ?? text.length);
    if (/[{[][^"'\n]*\$\{/.test(lineText)) message += ' (inside { } or [ ], quote a variable: "${VAR}")';
    problems.push({ file, line, col, path: "", message });
    return { value: undefined, source, problems, unset: [] };
  }

  const walker = new Walker(doc, source, options.interpolate === false ? undefined : env);
  const value = walker.node(doc.contents, "", 0);
  if (doc.contents === null || value === null) {
    problems.push({ file, line: 1, col: 1, path: "", message: `the file is empty: expected ${expected}` });
  } else if (!(options.list ? yaml().isSeq(doc.contents) : yaml().isMap(doc.contents)) && walker.problems.length === 0) {
    const { line, col } = lines.linePos(doc.contents.range?.[0] ?? 0);
    const got = Array.isArray(value) ? "a list" : typeof value === "object" ? "a mapping" : `'${String(value)}'`;
    problems.push({ file, line, col, path: "", message: `expected ${expected}, got ${got}` });
  }
  return { value, source, problems: [...problems, ...walker.problems], unset: walker.unset };
}

/** Checks that must run before the YAML parser sees the text. */
function precheck(text: string, file: string, noun: string, maxBytes: number): ConfigProblem | undefined {
  const at = (offset: number, message: string): ConfigProblem => ({ file, ...lineCol(text, offset), path: "", message });
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > maxBytes) return at(0, tooLarge(bytes, noun, maxBytes));
  const control = /[\x00-\x08\x0B\x0C\x0E-\x1F\x7F\uFFFD]/.exec(text);
  if (control) {
    const code = control[0].codePointAt(0) ?? 0;
    const what = code === 0xfffd ? "bytes that are not UTF-8" : `control character U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
    return at(control.index, `binary data (${what}): ${noun} must be UTF-8 text`);
  }
  // The parser recurses per block sequence opened on one line (`- - - x`) too.
  const dashes = new RegExp(`^[ \\t]*(?:-[ \\t]+){${MAX_DEPTH + 1}}`, "m").exec(text);
  if (dashes) return at(dashes.index, `nesting deeper than ${MAX_DEPTH} levels`);
  // The parser recurses per flow level ([ and {), so deep flow nesting is
  // refused before parsing; brackets inside strings count too, which is
  // harmless at this depth.
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5b || c === 0x7b) {
      if (++depth > MAX_DEPTH) return at(i, `nesting deeper than ${MAX_DEPTH} levels`);
    } else if ((c === 0x5d || c === 0x7d) && depth > 0) {
      depth--;
    }
  }
  return undefined;
}

class Walker {
  readonly problems: ConfigProblem[] = [];
  readonly unset: UnsetVariable[] = [];
  private aliases = 0;
  private nodes = 0;
  private stopped = false;

  constructor(
    private readonly doc: Document,
    private readonly source: SourceMap,
    /** Undefined: `${VAR}` is kept as written. */
    private readonly env: Env | undefined,
  ) {}

  node(node: unknown, pointer: string, depth: number): unknown {
    if (this.stopped || node === null || node === undefined) return null;
    if (++this.nodes > MAX_NODES) return this.stop(pointer, `more than ${MAX_NODES} values once aliases are expanded`);
    if (yaml().isAlias(node)) return this.alias(node, pointer, depth);
    if (depth > MAX_DEPTH) return this.stop(pointer, `nesting deeper than ${MAX_DEPTH} levels`);
    if (yaml().isMap(node)) {
      const out: Record<string, unknown> = {};
      for (const pair of node.items) {
        const key = this.key(pair.key, pointer);
        if (key === undefined) continue;
        const child = `${pointer}/${pointerSegment(key)}`;
        const value = pair.value as Node | null;
        const keyOffset = (pair.key as Node).range?.[0] ?? 0;
        if (Object.hasOwn(out, key)) {
          const { line, col } = this.source.offsetPosition(keyOffset);
          const message = `duplicate key '${key}': each key may appear once in a mapping`;
          this.problems.push({ file: this.source.file, line, col, path: child, message });
          continue;
        }
        this.source.record(child, {
          key: keyOffset,
          value: value?.range?.[0] ?? keyOffset,
          block: (yaml().isMap(value) || yaml().isSeq(value)) && !value.flow,
        });
        out[key] = this.node(value, child, depth + 1);
      }
      return out;
    }
    if (yaml().isSeq(node)) {
      return node.items.map((item, index) => {
        const child = `${pointer}/${index}`;
        const offset = (item as Node | null)?.range?.[0] ?? node.range?.[0] ?? 0;
        this.source.record(child, { value: offset, block: false });
        return this.node(item, child, depth + 1);
      });
    }
    if (yaml().isScalar(node)) return this.scalar(node.value, pointer);
    return this.fail(pointer, "unsupported YAML node");
  }

  private alias(node: Alias, pointer: string, depth: number): unknown {
    if (++this.aliases > MAX_ALIASES) {
      return this.stop(pointer, `more than ${MAX_ALIASES} alias references (an alias bomb?)`);
    }
    const target = node.resolve(this.doc);
    if (!target) return this.fail(pointer, `unknown alias '*${node.source}'`);
    return this.node(target, pointer, depth);
  }

  private key(key: unknown, pointer: string): string | undefined {
    const fail = (message: string) => {
      this.problems.push(this.source.problem(pointer, message));
      return undefined;
    };
    if (!yaml().isScalar(key)) return fail("mapping keys must be plain strings");
    const raw = key.value;
    if (typeof raw !== "string" && typeof raw !== "number") return fail(`mapping key ${JSON.stringify(String(raw))} must be a string`);
    const name = String(raw);
    if (FORBIDDEN_KEYS.has(name)) {
      const { line, col } = this.source.offsetPosition(key.range?.[0] ?? 0);
      const path = `${pointer}/${pointerSegment(name)}`;
      this.problems.push({ file: this.source.file, line, col, path, message: `key '${name}' is not allowed` });
      return undefined;
    }
    return name;
  }

  private scalar(value: unknown, pointer: string): unknown {
    if (typeof value === "string") {
      if (this.env === undefined) return value;
      const result = interpolate(value, this.env);
      for (const name of result.missing) this.unset.push({ pointer, name });
      for (const text of result.malformed ?? []) {
        this.fail(
          pointer,
          `malformed variable reference '${text}': write \${NAME} or \${NAME:-default} (NAME of letters, digits and _), or $\${ for a literal \${`,
        );
      }
      return result.value;
    }
    if (typeof value === "number") return Number.isFinite(value) ? value : this.fail(pointer, "expected a finite number");
    if (typeof value === "boolean" || value === null) return value;
    return this.fail(pointer, "unsupported value: use strings, numbers, booleans, lists and mappings");
  }

  private fail(pointer: string, message: string): null {
    this.problems.push(this.source.problem(pointer, message));
    return null;
  }

  /** Hostile input: report once and stop walking, so the cost stays bounded. */
  private stop(pointer: string, message: string): null {
    this.fail(pointer, message);
    this.stopped = true;
    return null;
  }
}

function yamlMessage(message: string): string {
  const first = message.split("\n")[0] ?? message;
  return `YAML syntax: ${first.replace(/ at line \d+, column \d+:?$/, "")}`;
}

function lineCol(text: string, offset: number): { line: number; col: number } {
  let line = 1;
  let start = 0;
  for (let i = text.indexOf("\n"); i !== -1 && i < offset; i = text.indexOf("\n", i + 1)) {
    line++;
    start = i + 1;
  }
  return { line, col: offset - start + 1 };
}

/** What is said of a file past its limit. */
export function tooLarge(bytes: number, noun: string, maxBytes: number): string {
  const MB = 1024 * 1024;
  const limit = maxBytes % MB === 0 ? `${maxBytes / MB} MB` : maxBytes % 1024 === 0 ? `${maxBytes / 1024} KB` : `${maxBytes} bytes`;
  return `file is ${formatSize(bytes)}: ${noun} may be at most ${limit}`;
}

function formatSize(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / (1024 * 1024)).toFixed(1)} MB` : `${(bytes / 1024).toFixed(1)} KB`;
}
