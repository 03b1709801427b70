/**
 * Warnings about a model entry that loads but will not do what it asks
 * (docs/model-servers.md#prompt-caching): `runtime validate` prints each at
 * its line, beside the lint for excessive agency (agency.ts).
 */
import type { ConfigProblem } from "../errors.js";
import { pointer, type SourceMap } from "./source.js";
import type { ResolvedTeam } from "./types.js";

/** `cache: true` on an `openai` model whose base_url is Anthropic's OpenAI-compatible shim, which drops `cache_control`. */
export function cacheDroppedWarnings(team: ResolvedTeam, source: SourceMap): ConfigProblem[] {
  return Object.values(team.models).flatMap((model) => {
    if (model.provider !== "openai" || !model.cache || !isAnthropicShim(model.base_url)) return [];
    return [
      source.problem(
        pointer("models", model.name, "cache"),
        `warning: model ${model.name} asks for prompt caching through Anthropic's OpenAI-compatible endpoint, which drops cache_control: nothing will be cached. ` +
          "Use provider: anthropic (and drop /v1 from base_url) for the cache, thinking blocks and exact usage",
      ),
    ];
  });
}

function isAnthropicShim(baseURL: string | undefined): boolean {
  if (baseURL === undefined || !URL.canParse(baseURL)) return false;
  return new URL(baseURL).hostname.toLowerCase() === "api.anthropic.com";
}
