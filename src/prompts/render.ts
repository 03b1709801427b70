import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { lazily } from "../lazy.js";
import { precompiledTemplate, TEMPLATE_OPTIONS } from "./precompiled.js";

// The one-file build, on first use: the package's entry is ~40 modules (tens of ms at start-up).
const handlebars = lazily<typeof import("handlebars")>("handlebars/dist/handlebars.min.js");

/** Directory of the default prompt templates shipped with the package. */
export const DEFAULT_PROMPTS_DIR = fileURLToPath(new URL("../../prompts/", import.meta.url));

export type Template = (data: Record<string, unknown>) => string;

const cache = new Map<string, Template>();
/** Templates compiled from text, by text: a run's `prompt:` is compiled once per process, not once per run. */
const byText = new Map<string, Template>();
const MAX_TEXTS = 256;

/**
 * Compile a template file. Only template files are compiled, never user,
 * model or tool text; `noEscape` because prompts are not HTML, `strict` so a
 * misspelt variable fails loudly instead of rendering as nothing. A default
 * prompt comes compiled from the build (src/prompts/precompiled.ts).
 */
export function templateFromFile(path: string): Template {
  let template = cache.get(path);
  if (!template) {
    const text = readFileSync(path, "utf8");
    const built = precompiledTemplate(path, text);
    template = built ? (data) => built(data) : compile(text);
    cache.set(path, template);
  }
  return template;
}

/** Compile template text that came from a template file or the team file's `prompt:` key. */
export function compileTemplate(text: string): Template {
  let template = byText.get(text);
  if (!template) {
    // Bounded: a server loading ever new teams must not grow without end.
    if (byText.size >= MAX_TEXTS) byText.delete(byText.keys().next().value as string);
    template = compile(text);
    byText.set(text, template);
  }
  return template;
}

/** The default template of an agent kind, e.g. `react` → prompts/react.hbs. */
export function defaultTemplate(kind: string): Template {
  return templateFromFile(`${DEFAULT_PROMPTS_DIR}${kind}.hbs`);
}

/**
 * Why template text cannot be used, in one line, or undefined: a syntax error,
 * or a partial (none are registered). Lets the loader refuse a broken prompt
 * before any run.
 */
export function templateProblem(text: string): string | undefined {
  let ast: unknown;
  try {
    ast = handlebars().parse(text);
  } catch (err) {
    const lines = (err instanceof Error ? err.message : String(err)).split("\n");
    const where = /^Parse error on line (\d+):/.exec(lines[0] ?? "");
    return where ? `line ${where[1]}: ${lines[lines.length - 1] ?? ""}` : lines[0];
  }
  const partial = findPartial(ast, 0);
  return partial === undefined ? undefined : `partials ({{> ${partial}}}) are not supported`;
}

function findPartial(node: unknown, depth: number): string | undefined {
  if (typeof node !== "object" || node === null || depth > 200) return undefined;
  const n = node as { type?: unknown; name?: { original?: unknown } };
  if (n.type === "PartialStatement" || n.type === "PartialBlockStatement") return String(n.name?.original ?? "");
  for (const value of Object.values(node)) {
    const found = Array.isArray(value) ? value.map((v) => findPartial(v, depth + 1)).find((p) => p !== undefined) : findPartial(value, depth + 1);
    if (found !== undefined) return found;
  }
  return undefined;
}

let env: ReturnType<typeof import("handlebars")["create"]> | undefined;

/**
 * One Handlebars environment for the process: no helper or partial is ever
 * registered in it, so templates cannot affect each other.
 */
function compile(text: string): Template {
  env ??= handlebars().create();
  const fn = env.compile(text, { ...TEMPLATE_OPTIONS });
  return (data) => fn(data);
}
