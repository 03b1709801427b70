import { redactWithJson } from "../trace/redact.js";
import type { EventSink } from "./bus.js";

export interface NdjsonSinkOptions {
  /** Exact values (configured API keys) masked on top of `redact`'s rules. */
  secrets?: readonly string[];
}

/**
 * A sink writing one redacted JSON event per line. `write` receives each line
 * with its trailing `\n`, ready for `process.stdout.write`.
 */
export function ndjsonSink(write: (line: string) => void, options: NdjsonSinkOptions = {}): EventSink {
  const secrets = options.secrets ?? [];
  return (event) => write(`${redactWithJson(event, secrets).json}\n`);
}
