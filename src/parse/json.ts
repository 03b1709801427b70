/**
 * Tolerant JSON for model output: the one place that knows the slips models
 * make around a JSON value (prose around it, a ```json fence, trailing
 * commas). Callers choose which slips they forgive and which value they want;
 * the order candidates are tried in, and so which one wins and which parse
 * error is reported, is defined here once.
 */

/** Which candidate texts {@link jsonCandidates} takes from a model's output. */
export interface JsonCandidateOptions {
  /**
   * The whole trimmed text is a candidate `"always"`, or only when it opens
   * with `{` (`"object"`): a reply that opens with prose would otherwise
   * report a parse error about the prose instead of the JSON it attempted.
   * @default "always"
   */
  whole?: "always" | "object";
  /**
   * Fenced blocks are looked for `"anywhere"` in the text, or only as a fence
   * wrapping the whole text (`"whole"`), where a fence in the middle is most
   * likely inside a JSON string.
   * @default "anywhere"
   */
  fences?: "anywhere" | "whole";
  /**
   * How many `{` a balanced `{...}` span is tried from, in order; 0 for none.
   * Finding a span is linear in the text, so the cap keeps a long reply full
   * of braces from costing a quadratic scan.
   * @default 32
   */
  maxSpanStarts?: number;
  /**
   * Also try each candidate with its trailing commas dropped, after every
   * unrepaired candidate: exact JSON is always preferred to a guess.
   * @default false
   */
  repair?: boolean;
}

/** Options of {@link parseJsonTolerant}: the candidates to try and the value wanted. */
export interface ParseJsonOptions extends JsonCandidateOptions {
  /**
   * Whether a parsed value is the one wanted; a refused value lets the search
   * go on. Called once per parsed candidate, in order, so a caller may keep
   * why it refused the first one.
   * @default every value is accepted
   */
  accept?: (value: unknown) => boolean;
}

/**
 * The first accepted value, or why there was none: the first `JSON.parse`
 * error met (undefined when every candidate parsed, or there was none) and
 * how many candidates were tried (0: nothing in the text looked like JSON).
 */
export type TolerantJson = { ok: true; value: unknown } | { ok: false; error: string | undefined; attempted: number };

// Defaults in one place: every place JSON may hide is searched, but repairing
// is a guess about what the model meant, which a caller opts into.
const DEFAULTS: Required<JsonCandidateOptions> = {
  whole: "always",
  fences: "anywhere",
  maxSpanStarts: 32,
  repair: false,
};

// A fence may carry any language tag (models write ```json, ```JSON, ```js).
// FENCE_WHOLE is anchored at both ends, so its lazy body stretches to the last
// fence and a fence inside a JSON string of the body does not cut it short.
const FENCE_ANYWHERE = /```[\w-]*[ \t]*\r?\n?([\s\S]*?)```/g;
const FENCE_WHOLE = /^```[\w-]*[ \t]*\r?\n?([\s\S]*?)```$/;

/**
 * Texts that may hold the JSON, in the order they are tried: the whole
 * trimmed text, fenced blocks, balanced `{...}` spans (strings honoured), then
 * when `repair` is set the same texts with their trailing commas dropped.
 * Empty and repeated candidates are skipped; candidates are found lazily.
 */
export function* jsonCandidates(text: string, options: JsonCandidateOptions = {}): Generator<string> {
  const resolved = resolveOptions(options);
  // A leading reasoning block (`<think>…</think>`) never gets here: the model
  // client splits it off the reply (src/models/dialect.ts, docs/model-servers.md).
  const trimmed = text.trim();
  const seen = new Set<string>();
  for (const candidate of unrepaired(trimmed, resolved)) {
    if (candidate === "" || seen.has(candidate)) continue;
    seen.add(candidate);
    yield candidate;
  }
  if (!resolved.repair) return;
  for (const candidate of [...seen]) {
    const repaired = dropTrailingCommas(candidate);
    if (seen.has(repaired)) continue;
    seen.add(repaired);
    yield repaired;
  }
}

/**
 * Parse model output tolerantly: the first candidate of {@link jsonCandidates}
 * that parses and is accepted wins.
 */
export function parseJsonTolerant(text: string, options: ParseJsonOptions = {}): TolerantJson {
  const { accept, ...candidateOptions } = options;
  let error: string | undefined;
  let attempted = 0;
  for (const candidate of jsonCandidates(text, candidateOptions)) {
    attempted++;
    let value: unknown;
    try {
      value = JSON.parse(candidate);
    } catch (err) {
      // The first error is about the likeliest candidate; later ones are guesses.
      // The whole message is kept (it quotes the text, newlines and all): callers format it.
      error ??= err instanceof Error ? err.message : String(err);
      continue;
    }
    if (bracketsExceed(candidate, MAX_JSON_DEPTH) && nestsDeeperThan(value, MAX_JSON_DEPTH)) {
      // Whatever would walk it (ajv, JSON.stringify, redaction) could overflow the stack.
      error ??= `the JSON nests deeper than ${MAX_JSON_DEPTH} levels`;
      continue;
    }
    if (!accept || accept(value)) return { ok: true, value };
  }
  return { ok: false, error, attempted };
}

/** How deep parsed model output may nest (docs/design/engine.md#limits). */
export const MAX_JSON_DEPTH = 64;

/** Whether `value` has arrays or objects nested more than `max` levels deep; iterative, so any depth is safe to ask about. */
export function nestsDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== "object") return false;
  // Two parallel stacks: no tuple allocated per node.
  const nodes: object[] = [value];
  const depths: number[] = [1];
  while (nodes.length > 0) {
    const node = nodes.pop() as object;
    const depth = depths.pop() as number;
    if (depth > max) return true;
    const children = Array.isArray(node) ? (node as unknown[]) : Object.values(node);
    for (let i = 0; i < children.length; i++) {
      const child = children[i];
      if (child !== null && typeof child === "object") {
        nodes.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/**
 * Whether JSON text holds more than `max` opening brackets: when it does not,
 * what it parses to cannot nest deeper than `max`, and the walk above is
 * skipped (a model's reply holds a handful).
 */
function bracketsExceed(text: string, max: number): boolean {
  let open = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c === 123 || c === 91) && ++open > max) return true; // { [
  }
  return false;
}

// An option passed as `undefined` takes its default too, which a spread would not do.
function resolveOptions(options: JsonCandidateOptions): Required<JsonCandidateOptions> {
  return {
    whole: options.whole ?? DEFAULTS.whole,
    fences: options.fences ?? DEFAULTS.fences,
    maxSpanStarts: options.maxSpanStarts ?? DEFAULTS.maxSpanStarts,
    repair: options.repair ?? DEFAULTS.repair,
  };
}

function* unrepaired(text: string, options: Required<JsonCandidateOptions>): Generator<string> {
  if (options.whole === "always" || text.startsWith("{")) yield text;
  yield* fencedBlocks(text, options.fences);
  yield* objectSpans(text, options.maxSpanStarts);
}

function* fencedBlocks(text: string, where: "anywhere" | "whole"): Generator<string> {
  if (where === "whole") {
    const body = FENCE_WHOLE.exec(text)?.[1]?.trim();
    if (body) yield body;
    return;
  }
  for (const match of text.matchAll(FENCE_ANYWHERE)) {
    const body = match[1]?.trim();
    if (body) yield body;
  }
}

/**
 * Balanced `{...}` spans from the first `maxStarts` braces. When the first `{`
 * never closes (a truncated or malformed object), the text from it to the
 * last `}` is tried as well: it cannot parse, but its parse error says what is
 * wrong with the object the model attempted.
 */
function* objectSpans(text: string, maxStarts: number): Generator<string> {
  let starts = 0;
  for (let i = text.indexOf("{"); i >= 0 && starts < maxStarts; i = text.indexOf("{", i + 1)) {
    starts++;
    const end = balancedEnd(text, i);
    if (end > i) {
      yield text.slice(i, end + 1);
    } else if (starts === 1) {
      const last = text.lastIndexOf("}");
      if (last > i) yield text.slice(i, last + 1);
    }
  }
}

/** Index of the `}` closing the object opened at `start`, honouring strings; -1 if unbalanced. */
function balancedEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === "{" || ch === "[") depth++;
    else if (ch === "}" || ch === "]") {
      depth--;
      if (depth === 0) return ch === "}" ? i : -1;
      if (depth < 0) return -1;
    }
  }
  return -1;
}

/**
 * `text` without the commas that directly precede a `}` or `]`, strings
 * honoured: a comma inside a string value is the model's data, not a slip.
 */
function dropTrailingCommas(text: string): string {
  let out = "";
  let from = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (ch === "\\") i++;
      else if (ch === '"') inString = false;
    } else if (ch === '"') inString = true;
    else if (ch === ",") {
      let j = i + 1;
      while (j < text.length && /\s/.test(text[j] ?? "")) j++;
      if (text[j] === "}" || text[j] === "]") {
        out += text.slice(from, i);
        from = i + 1;
      }
    }
  }
  return out + text.slice(from);
}

/** The JSON object a text holds exactly (no tolerance), or undefined. */
export function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
