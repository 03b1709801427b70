/**
 * Token usage summed, and priced: the one sum and the one cost, used by the
 * engine (budgets), the run's projection and the live view, and `runtime test`. It imports no value, so its compiled JavaScript runs in the page
 * beside the projection's (docs/design/projection.md).
 */
import type { Usage } from "./types.js";

/**
 * `a` and `b` added field by field; the optional counts (cached, cache-written
 * and reasoning tokens, calls of `unknown` usage) present only when above 0,
 * and the cache's hit rate with them.
 */
export function addUsage(a: Usage, b: Usage): Usage {
  const cached_tokens = (a.cached_tokens ?? 0) + (b.cached_tokens ?? 0);
  const cache_write_tokens = (a.cache_write_tokens ?? 0) + (b.cache_write_tokens ?? 0);
  const prompt_tokens = a.prompt_tokens + b.prompt_tokens;
  const reasoning_tokens = (a.reasoning_tokens ?? 0) + (b.reasoning_tokens ?? 0);
  const unknown = (a.unknown ?? 0) + (b.unknown ?? 0);
  return {
    prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    ...(cached_tokens > 0 ? { cached_tokens } : {}),
    ...(cache_write_tokens > 0 ? { cache_write_tokens } : {}),
    ...(cached_tokens > 0 && prompt_tokens > 0 ? { cache_hit_rate: Math.round((cached_tokens / prompt_tokens) * 1000) / 1000 } : {}),
    ...(reasoning_tokens > 0 ? { reasoning_tokens } : {}),
    ...(unknown > 0 ? { unknown } : {}),
  };
}

/** A model's `price` (docs/budgets.md): US dollars per million tokens. */
export interface TokenPrice {
  input_per_mtok: number;
  output_per_mtok: number;
  cached_input_per_mtok?: number;
  cache_write_per_mtok?: number;
}

/** What a model call cost in US dollars at `price` (0 without one). */
export function costOf(usage: Usage, price: TokenPrice | undefined): number {
  if (!price) return 0;
  // Prompt tokens read from the cache and written to it are part of prompt_tokens, each at its own rate when the price gives one (docs/budgets.md).
  const cached = usage.cached_tokens ?? 0;
  const written = usage.cache_write_tokens ?? 0;
  const input =
    (usage.prompt_tokens - cached - written) * price.input_per_mtok +
    cached * (price.cached_input_per_mtok ?? price.input_per_mtok) +
    written * (price.cache_write_per_mtok ?? price.input_per_mtok);
  return (input + usage.completion_tokens * price.output_per_mtok) / 1_000_000;
}
