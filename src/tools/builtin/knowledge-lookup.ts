import type { KnowledgeConfig } from "../../config/types.js";
import { openLibrary } from "../knowledge/library.js";
import type { Tool } from "../types.js";
import { RuntimeError } from "../../errors.js";

/** Most passages one lookup may ask for. */
export const MAX_TOP_K = 10;

const PARAMETERS = Object.freeze({
  type: "object",
  properties: {
    query: { type: "string", minLength: 1, maxLength: 2000, description: 'What to look for, in words (e.g. "circle area formula").' },
    top_k: { type: "integer", minimum: 1, maximum: MAX_TOP_K, description: "How many passages to return." },
  },
  required: ["query"],
  additionalProperties: false,
});

/**
 * The `knowledge_lookup` built-in (docs/design/plan-and-solve-design.md diagram 7): full-text search
 * (BM25+) over the team's own documents, answering the best passages with
 * their file and lines. The index is built on the first call.
 */
export function knowledgeLookupTool(config: KnowledgeConfig | undefined): Tool {
  return {
    name: "knowledge_lookup",
    description: "Search the team's documents; returns the best matching passages with their file and lines.",
    parameters: PARAMETERS,
    effect: "read",
    timeout_ms: 10_000,
    max_output_bytes: 65536,
    execute: async (args) => {
      // references.ts refuses a team that lists the tool without knowledge; a library caller may still build one.
      if (!config) throw new RuntimeError("CONFIG_INVALID", "this team has no knowledge: add knowledge: {paths: [...]} to the team file");
      const query = String(args.query);
      const library = await openLibrary(config);
      const passages = library.search(query, typeof args.top_k === "number" ? args.top_k : config.top_k);
      return {
        query,
        passages,
        ...(passages.length === 0 ? { note: `nothing matched in ${library.files} file(s); try other words` } : {}),
        ...(library.skipped.length > 0 ? { skipped: library.skipped } : {}),
      };
    },
  };
}
