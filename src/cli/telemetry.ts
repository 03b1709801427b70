import type { Telemetry } from "../telemetry/telemetry.js";

/**
 * OpenTelemetry for a command (docs/telemetry.md): started when `--otel` is
 * given or OTEL_EXPORTER_OTLP_ENDPOINT is set, else undefined and nothing of
 * the SDK loaded. Throws a one-line Error for an endpoint that is not a URL.
 */
export async function startTelemetryIfAsked(otel: boolean | undefined, command: string): Promise<Telemetry | undefined> {
  const { startTelemetry, telemetryRequested } = await import("../telemetry/telemetry.js");
  if (!telemetryRequested(process.env, otel === true)) return undefined;
  return startTelemetry({ onWarning: (message) => void process.stderr.write(`runtime ${command}: warning: ${message}\n`) });
}
