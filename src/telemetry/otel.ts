/**
 * The OpenTelemetry SDK set up for the runtime's spans (docs/telemetry.md): a
 * tracer provider of its own (nothing registered globally), a batch span
 * processor, the OTLP/HTTP (JSON) exporter. Loaded only when telemetry is
 * turned on (src/telemetry/telemetry.ts imports this file lazily).
 */
import type { TracerProvider as ApiTracerProvider } from "@opentelemetry/api";
import { ExportResultCode, type ExportResult } from "@opentelemetry/core";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { detectResources, envDetector, resourceFromAttributes } from "@opentelemetry/resources";
import { BatchSpanProcessor, RandomIdGenerator, TracerProvider, type IdGenerator, type ReadableSpan, type SpanExporter } from "@opentelemetry/sdk-trace";
import { describeError } from "../errors.js";
import { otelSink } from "./otel-sink.js";
import type { ResolvedOtelOptions, Telemetry } from "./types.js";

const TRACER_NAME = "yaml-agent-runtime";

/** Start exporting: the SDK's pieces, or the application's own tracer provider. */
export function startOtel(options: ResolvedOtelOptions): Telemetry {
  if (options.tracerProvider) return ownProvider(options.tracerProvider, options);

  const ids = new TaskTraceIds();
  const exporter = new WarningExporter(
    new OTLPTraceExporter({
      url: options.url,
      timeoutMillis: options.timeoutMs,
      ...(options.headers ? { headers: options.headers } : {}),
    }),
    options.url,
    options.warn,
  );
  const resource = resourceFromAttributes({ "service.name": options.serviceName }).merge(detectResources({ detectors: [envDetector] }));
  const provider = new TracerProvider({
    resource,
    idGenerator: ids,
    spanProcessors: [new BatchSpanProcessor({ exporter, exportTimeoutMillis: options.timeoutMs })],
  });
  const tracer = provider.getTracer(TRACER_NAME);
  let stopped: Promise<void> | undefined;
  return {
    endpoint: options.shownUrl,
    sink: (sinkOptions = {}) =>
      otelSink(tracer, { captureContent: options.captureContent, ...sinkOptions, beforeRootSpan: (task_id) => ids.nextTrace(task_id) }),
    flush: () => bounded(provider.forceFlush({ timeoutMillis: options.timeoutMs }), options.timeoutMs),
    shutdown: () => (stopped ??= bounded(provider.shutdown(), options.timeoutMs)),
  };
}

/** Spans made with the application's tracer provider: flushed if it can be, never shut down (it is theirs). */
function ownProvider(provider: ApiTracerProvider, options: ResolvedOtelOptions): Telemetry {
  const tracer = provider.getTracer(TRACER_NAME);
  const flush = () => {
    const p = provider as ApiTracerProvider & { forceFlush?: () => Promise<void> };
    return typeof p.forceFlush === "function" ? bounded(p.forceFlush(), options.timeoutMs) : Promise.resolve();
  };
  return {
    endpoint: "the application's tracer provider",
    sink: (sinkOptions = {}) => otelSink(tracer, { captureContent: options.captureContent, ...sinkOptions }),
    flush,
    shutdown: flush,
  };
}

/**
 * Trace ids from task ids: the root span of a run whose task_id is a UUID
 * gets that UUID as its trace id, so a run is found in a tracing backend by
 * the id `runtime trace` prints. Anything else is random.
 */
class TaskTraceIds implements IdGenerator {
  private readonly random = new RandomIdGenerator();
  private next: string | undefined;

  /** The next trace id made (the run's root span starts right after, synchronously). */
  nextTrace(task_id: string): void {
    const hex = task_id.replace(/-/g, "").toLowerCase();
    this.next = /^[0-9a-f]{32}$/.test(hex) && !/^0+$/.test(hex) ? hex : undefined;
  }

  generateTraceId(): string {
    const id = this.next ?? this.random.generateTraceId();
    this.next = undefined;
    return id;
  }

  generateSpanId(): string {
    return this.random.generateSpanId();
  }
}

/** The exporter, saying once per process (not per batch) that spans could not be sent, and why. */
class WarningExporter implements SpanExporter {
  private warned = false;

  constructor(
    private readonly inner: SpanExporter,
    private readonly url: string,
    private readonly warn: (message: string) => void,
  ) {}

  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    this.inner.export(spans, (result) => {
      if (result.code !== ExportResultCode.SUCCESS && !this.warned) {
        this.warned = true;
        const why = result.error ? describeError(result.error) : "the export failed";
        this.warn(`cannot send spans to ${this.url}: ${why} (later failures are not reported)`);
      }
      done(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

/** `work`, or nothing once `ms` (and a little) have passed; never rejects. */
function bounded(work: Promise<void>, ms: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms + 250);
    timer.unref();
    work.then(
      () => {
        clearTimeout(timer);
        resolve();
      },
      () => {
        clearTimeout(timer);
        resolve();
      },
    );
  });
}
