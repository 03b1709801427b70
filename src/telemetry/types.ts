/**
 * The types shared by src/telemetry/telemetry.ts (options, start-up) and
 * src/telemetry/otel.ts (the SDK), so that neither imports the other's types
 * (docs/telemetry.md).
 */
import type { TracerProvider } from "@opentelemetry/api";
import type { ResolvedTeam } from "../config/types.js";
import type { EventSink } from "../events/bus.js";

/** Spans for runs: one sink per run, one flush before the process ends. */
export interface Telemetry {
  /** Where spans go (credentials masked), for messages. */
  readonly endpoint: string;
  /** A sink for one run: `runTeam(team, { sinks: [telemetry.sink({ team })] })`. */
  sink(options?: { team?: ResolvedTeam }): EventSink;
  /** Send what is pending; resolves within the timeout, never rejects. */
  flush(): Promise<void>;
  /** Send what is pending and stop; resolves within the timeout, never rejects. */
  shutdown(): Promise<void>;
}

/** What otel.ts is given: every option decided. */
export interface ResolvedOtelOptions {
  url: string;
  shownUrl: string;
  headers?: Record<string, string>;
  serviceName: string;
  captureContent: boolean;
  timeoutMs: number;
  tracerProvider?: TracerProvider;
  warn(message: string): void;
}
