import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import Handlebars from "handlebars";

/** Directory of the default prompt templates shipped with the package. */
export const DEFAULT_PROMPTS_DIR = fileURLToPath(new URL("../../prompts/", import.meta.url));

export type Template = (data: Record<string, unknown>) => string;

const cache = new Map<string, Template>();

/**
 * Compile a template file. Only template files are compiled, never user,
 * model or tool text; `noEscape` because prompts are not HTML, `strict` so a
 * misspelt variable fails loudly instead of rendering as nothing.
 */
export function templateFromFile(path: string): Template {
  let template = cache.get(path);
  if (!template) {
    template = compile(readFileSync(path, "utf8"));
    cache.set(path, template);
  }
  return template;
}

/** Compile template text that came from a template file or the team file's `prompt:` key. */
export function compileTemplate(text: string): Template {
  return compile(text);
}

/** The default template of an agent kind, e.g. `react` → prompts/react.hbs. */
export function defaultTemplate(kind: string): Template {
  return templateFromFile(`${DEFAULT_PROMPTS_DIR}${kind}.hbs`);
}

function compile(text: string): Template {
  const hb = Handlebars.create();
  const fn = hb.compile(text, { noEscape: true, strict: true });
  return (data) => fn(data);
}
