/**
 * One model call of any HTTP provider, tried again as docs/model-servers.md
 * says: on the one retry loop with `retryPolicies.modelCall`, its tries from
 * the model's `max_retries`, all within one deadline (`timeout_ms`), a
 * `retry-after` obeyed up to `max_retry_wait_ms` and failing at once past
 * it, and every failure one line without a key (openai-errors.ts).
 */
import type { OpenAIModelConfig } from "../config/types.js";
import { RuntimeError } from "../errors.js";
import { retry, retryPolicies } from "../retry.js";
import { CallControl } from "./call-control.js";
import { describeFailure, displayURL, isRetryable, OPENAI_ERRORS, retryAfterMs, type SdkErrors } from "./openai-errors.js";

/** What a provider's client tells the loop. */
export interface CallTarget {
  config: OpenAIModelConfig;
  /** The base URL the client speaks to (for messages). */
  baseURL: string;
  apiKey: string | undefined;
  signal: AbortSignal | undefined;
  /** The client's error classes. @default the `openai` client's */
  sdk?: SdkErrors;
}

/**
 * `attempt(n, control)` until it succeeds, retried as the module comment
 * says; `control` is the try's abort signal and deadline, released after it.
 */
export async function callWithRetries<T>(target: CallTarget, attempt: (n: number, control: CallControl) => Promise<T>): Promise<T> {
  const { config, baseURL, apiKey, signal, sdk = OPENAI_ERRORS } = target;
  if (signal?.aborted) throw aborted(config.model);
  const deadline = Date.now() + config.timeout_ms;
  const failure = (err: unknown, n: number) => describeFailure(err, config, baseURL, apiKey, n + 1, sdk);
  let tried = 0;
  const one = async (n: number): Promise<T> => {
    tried = n;
    const control = new CallControl(signal, deadline, `${config.timeout_ms} ms (timeout_ms) from ${displayURL(baseURL)}`);
    try {
      return await attempt(n, control);
    } catch (err) {
      if (signal?.aborted) throw aborted(config.model);
      if (control.expired) throw new RuntimeError("MODEL_UNAVAILABLE", `model ${config.model}: ${control.expired}${tries(n)}`);
      throw err;
    } finally {
      control.release();
    }
  };
  try {
    return await retry(one, {
      policy: { ...retryPolicies.modelCall, tries: config.max_retries + 1 },
      isRetryable: (err) => isRetryable(err, sdk),
      signal,
      retryAfter: (err) => retryAfterMs(err, sdk),
      onRetry: ({ error, attempt: n, pauseMs }) => {
        const asked = retryAfterMs(error, sdk);
        if (asked !== undefined && asked > config.max_retry_wait_ms) {
          const why = `the server asks to retry after ${seconds(asked)}, longer than max_retry_wait_ms (${seconds(config.max_retry_wait_ms)})`;
          throw new RuntimeError("MODEL_UNAVAILABLE", `${failure(error, n).message}; ${why}`);
        }
        // A retry is worth sending only with time left for a reply after the wait.
        if (Date.now() + pauseMs + minAttemptMs(config.timeout_ms) >= deadline) {
          throw new RuntimeError("MODEL_UNAVAILABLE", `${failure(error, n).message}; no time left for a retry within timeout_ms (${config.timeout_ms} ms)`);
        }
      },
    });
  } catch (err) {
    if (signal?.aborted) throw aborted(config.model);
    throw failure(err, tried);
  }
}

/** The least time a retry needs for its reply: a tenth of the deadline, at least 100 ms. */
function minAttemptMs(timeoutMs: number): number {
  return Math.max(100, timeoutMs / 10);
}

function tries(attempt: number): string {
  return attempt === 0 ? "" : ` (attempt ${attempt + 1})`;
}

function seconds(ms: number): string {
  return ms >= 1000 ? `${Math.round(ms / 100) / 10} s` : `${ms} ms`;
}

/** A configured value, or undefined for unset or blank (`${X:-}`). */
export function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value;
}

function aborted(model: string): RuntimeError {
  return new RuntimeError("ABORTED", `model ${model}: request aborted`);
}
