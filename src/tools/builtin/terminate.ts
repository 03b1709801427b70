import type { Tool } from "../types.js";

// One schema object for every instance: its validator comes precompiled from the build
// (src/tools/builtin/validators.ts), or ajv compiles it once per process.
export const TERMINATE_PARAMETERS = Object.freeze({
  type: "object",
  properties: {
    answer: { type: "string", description: "The final answer." },
    status: { type: "string", enum: ["success", "failure"], description: "Defaults to success." },
  },
  required: ["answer"],
  additionalProperties: false,
});

/**
 * The `terminate` built-in. The tool registry lists it as a built-in the
 * agent's kind reads (src/config/tool-names.ts, `bound`), so it keeps its
 * name wherever it is declared, and a kind that sees its call in the
 * toolbox's outcome ends the run with its answer.
 */
export function terminateTool(): Tool {
  return {
    name: "terminate",
    description: "Finish the task with the final answer for the user.",
    parameters: TERMINATE_PARAMETERS,
    effect: "read",
    timeout_ms: 1000,
    max_output_bytes: 65536,
    execute: async (args) => ({
      answer: String(args.answer),
      status: args.status === "failure" ? "failure" : "success",
    }),
  };
}
