/**
 * The default prompts come compiled from the build (src/prompts/precompiled.ts):
 * the file the build wrote is what the sources make now, and a precompiled
 * template renders, and refuses a missing variable, exactly as the compiled one.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { precompiledTemplatesSource, TEMPLATE_OPTIONS } from "../../src/prompts/precompiled.js";
import { DEFAULT_PROMPTS_DIR } from "../../src/prompts/render.js";

const require = createRequire(import.meta.url);
const handlebars = require("handlebars/dist/handlebars.min.js") as typeof import("handlebars");
const dist = (path: string) => new URL(`../../dist/${path}`, import.meta.url);

const DATA: Record<string, Record<string, unknown>> = {
  react: {
    agent_name: "solver",
    description: "Solves <things> & more",
    tool_names: "calculator",
    iteration: 2,
    max_iteration: 5,
    plan: "1. a",
    current_state: "Recursion 2",
  },
  plan_and_solve: {
    agent_name: "p",
    description: "",
    tool_names: "todo",
    iteration: 1,
    max_iteration: 9,
    remaining_iterations: 8,
    todo_list: "1. [ ] a",
    todo_version: 3,
    todo_block_after: 2,
    todo_complete_after: 4,
  },
  conversation: {
    summary: "earlier",
    turns: [
      { input: "hi", answer: "hello" },
      { input: "2+2?", answer: "4" },
    ],
    input: "next",
  },
};

/** The message a call throws. */
function outcome(call: () => unknown): string {
  try {
    call();
  } catch (err) {
    return (err as Error).message;
  }
  return "(nothing thrown)";
}

describe("precompiled prompts", () => {
  it("npm run build wrote every default prompt, from its very text", () => {
    const built = readFileSync(fileURLToPath(dist("prompts/templates.cjs")), "utf8");
    // A dist/ older than a prompt would be skipped silently at run time (and compiled): rebuild.
    expect(built).toBe(precompiledTemplatesSource(DEFAULT_PROMPTS_DIR, handlebars));
  });

  it("render and refuse a missing variable exactly as the compiled template", async () => {
    const { precompiledTemplate } = (await import(dist("prompts/precompiled.js").href)) as typeof import("../../src/prompts/precompiled.js");
    for (const [name, data] of Object.entries(DATA)) {
      const path = `${DEFAULT_PROMPTS_DIR}${name}.hbs`;
      const text = readFileSync(path, "utf8");
      const built = precompiledTemplate(path, text);
      expect(built, name).toBeTypeOf("function");
      const compiled = handlebars.create().compile(text, { ...TEMPLATE_OPTIONS });
      expect(built!(data), name).toBe(compiled(data));
      // A missing variable: the same refusal, word for word.
      expect(() => compiled({}), name).toThrow();
      expect(() => built!({}), name).toThrow(outcome(() => compiled({})));
    }
    // Text that is not the file's own is not served from the build.
    expect(precompiledTemplate(`${DEFAULT_PROMPTS_DIR}react.hbs`, "{{changed}}")).toBeUndefined();
  });
});
