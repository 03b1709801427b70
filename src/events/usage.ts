/**
 * Token usage summed: the one sum, used by the engine and by the run's
 * projection. It imports no value, so its compiled JavaScript runs in the page
 * beside the projection's (docs/design/projection.md).
 */
import type { Usage } from "./types.js";

/**
 * `a` and `b` added field by field; the optional counts (cached and reasoning
 * tokens, calls of `unknown` usage) present only when above 0.
 */
export function addUsage(a: Usage, b: Usage): Usage {
  const cached_tokens = (a.cached_tokens ?? 0) + (b.cached_tokens ?? 0);
  const reasoning_tokens = (a.reasoning_tokens ?? 0) + (b.reasoning_tokens ?? 0);
  const unknown = (a.unknown ?? 0) + (b.unknown ?? 0);
  return {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    ...(cached_tokens > 0 ? { cached_tokens } : {}),
    ...(reasoning_tokens > 0 ? { reasoning_tokens } : {}),
    ...(unknown > 0 ? { unknown } : {}),
  };
}
