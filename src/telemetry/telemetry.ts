/**
 * Whether and where runs export OpenTelemetry spans (docs/telemetry.md). This
 * file is light on purpose: the SDK and the exporter (src/telemetry/otel.ts)
 * are imported only by `startTelemetry`, so a process that does not export
 * loads and sends nothing.
 */
import type { TracerProvider } from "@opentelemetry/api";
import { redactString } from "../redact.js";
import { RuntimeError } from "../errors.js";
import type { ResolvedOtelOptions, Telemetry } from "./types.js";

export type { Telemetry };

type Env = Readonly<Record<string, string | undefined>>;

export interface TelemetryOptions {
  /**
   * The collector's OTLP/HTTP base address; spans go to `<endpoint>/v1/traces`.
   * @default $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (whole), else $OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318
   */
  endpoint?: string;
  /** Headers of every export request (an API key of a hosted backend, say). @default $OTEL_EXPORTER_OTLP_HEADERS */
  headers?: Record<string, string>;
  /** The `service.name` of the spans. @default $OTEL_SERVICE_NAME, else "yaml-agent-runtime" */
  serviceName?: string;
  /**
   * Record prompts, answers, tool arguments and tool results as span
   * attributes (masked like events are).
   * @default $OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT === "true"
   */
  captureContent?: boolean;
  /** Longest wait for one export, and for the flush at shutdown. @default $OTEL_EXPORTER_OTLP_TRACES_TIMEOUT or $OTEL_EXPORTER_OTLP_TIMEOUT, else 5000 */
  timeoutMs?: number;
  /** Make spans with this tracer provider (the application's own SDK) instead of exporting them here. */
  tracerProvider?: TracerProvider;
  /** Told once when spans cannot be sent. @default a line on stderr */
  onWarning?: (message: string) => void;
  /** Where the OTEL_* variables are read. @default process.env */
  env?: Env;
}

/** The exporter's wait when no OTEL_*_TIMEOUT says otherwise: short, since `runtime exec` waits for it before exiting. */
export const DEFAULT_EXPORT_TIMEOUT_MS = 5000;

/**
 * Whether spans should be exported: asked for (`--otel`), or an OTLP
 * endpoint is set in the environment, and the SDK is not disabled
 * (OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none).
 */
export function telemetryRequested(env: Env = process.env, asked = false): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === "true") return false;
  if (env.OTEL_TRACES_EXPORTER?.trim().toLowerCase() === "none") return false;
  return asked || Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim());
}

/**
 * Start exporting spans of runs. Loads the OpenTelemetry SDK now (and only
 * now). Throws a one-line Error for an endpoint that is not an http(s) URL.
 */
export async function startTelemetry(options: TelemetryOptions = {}): Promise<Telemetry> {
  const resolved = resolveOptions(options);
  const { startOtel } = await import("./otel.js");
  return startOtel(resolved);
}

function resolveOptions(options: TelemetryOptions): ResolvedOtelOptions {
  const env = options.env ?? process.env;
  const url = tracesUrl(options.endpoint, env);
  const shownUrl = redactString(url);
  const warn = options.onWarning ?? ((message: string) => void process.stderr.write(`runtime: warning: ${message}\n`));
  return {
    url,
    shownUrl,
    ...(options.headers ? { headers: options.headers } : {}),
    serviceName: options.serviceName ?? (env.OTEL_SERVICE_NAME?.trim() || "yaml-agent-runtime"),
    captureContent: options.captureContent ?? env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.trim().toLowerCase() === "true",
    timeoutMs: options.timeoutMs ?? timeoutFromEnv(env) ?? DEFAULT_EXPORT_TIMEOUT_MS,
    ...(options.tracerProvider ? { tracerProvider: options.tracerProvider } : {}),
    // Whatever the exporter's error says, a credential in it stays masked.
    warn: (message) => warn(redactString(message)),
  };
}

/** The URL spans are posted to, as the OTLP exporter specification derives it. */
function tracesUrl(endpoint: string | undefined, env: Env): string {
  const whole = endpoint === undefined ? env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim() : undefined;
  const base = endpoint ?? (env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || "http://localhost:4318");
  const url = whole || `${base.replace(/\/+$/, "")}/v1/traces`;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RuntimeError("USAGE", `the OTLP endpoint ${redactString(url)} is not a URL (expected http://host:4318 or https://...)`);
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
    throw new RuntimeError("USAGE", `the OTLP endpoint ${redactString(url)} is not an http or https URL (spans are sent over OTLP/HTTP)`);
  }
  return url;
}

function timeoutFromEnv(env: Env): number | undefined {
  for (const name of ["OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"]) {
    const value = Number(env[name]);
    if (env[name]?.trim() && Number.isFinite(value) && value > 0) return value;
  }
  return undefined;
}
