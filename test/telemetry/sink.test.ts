/**
 * The span sink in-process, for what the CLI test does not reach: a model
 * that falls back to another (one chat span per attempt), a run cancelled
 * mid-tool (its open spans ended as errors), and an application's own tracer
 * provider (`startTelemetry({ tracerProvider })`, docs/telemetry.md).
 */
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider, type ReadableSpan } from "@opentelemetry/sdk-trace";
import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import { runTeam } from "../../src/engine/run-team.js";
import { defineTool, startTelemetry, telemetryRequested } from "../../src/index.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

function appTelemetry() {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  return { exporter, provider };
}

const parentId = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe("the OpenTelemetry sink", () => {
  it("gives each model of a fallback chain its own chat span, the failed one an error", async () => {
    const down = await startOpenAIServer({ respond: () => ({ status: 503, error: { message: "overloaded" } }) });
    const up = await startOpenAIServer({
      respond: () => ({ content: reactReply("ANSWER", { answer: "42" }), usage: { prompt_tokens: 7, completion_tokens: 3 } }),
    });
    servers.push(down, up);
    const file = writeTeam(`version: 1
name: fallback
models:
  primary: { provider: openai, model: big-model, base_url: "${down.url}", api_key: sk-fallback-0123456789, max_retries: 0, fallback: [backup] }
  backup: { provider: openai, model: small-model, base_url: "${up.url}", api_key: sk-fallback-0123456789, max_retries: 0 }
agents:
  solver: { kind: react, model: primary }
`);
    const { exporter, provider } = appTelemetry();
    const telemetry = await startTelemetry({ tracerProvider: provider });
    const team = await loadTeam(file);
    const result = await runTeam(team, { input: "6*7?", traceDir: tempDir(), sinks: [telemetry.sink({ team })] }).result;
    expect(result.answer).toBe("42");
    await telemetry.shutdown();

    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name).sort()).toEqual(["chat big-model", "chat small-model", "invoke_agent solver"]);
    const step = spans.find((s) => s.name === "invoke_agent solver")!;
    const [failed, answered] = [spans.find((s) => s.name === "chat big-model")!, spans.find((s) => s.name === "chat small-model")!];
    for (const chat of [failed, answered]) expect(parentId(chat)).toBe(step.spanContext().spanId);
    expect(failed.status).toMatchObject({ code: 2, message: expect.stringMatching(/503 overloaded/) });
    expect(failed.attributes).toMatchObject({ "gen_ai.request.model": "big-model", "gen_ai.provider.name": "openai" });
    expect(answered.status.code).toBe(0);
    expect(answered.attributes).toMatchObject({
      "gen_ai.request.model": "small-model",
      "gen_ai.response.model": "small-model",
      "runtime.model_name": "backup",
      "runtime.fallback_from": "big-model",
      "gen_ai.usage.input_tokens": 7,
      "gen_ai.usage.output_tokens": 3,
      "gen_ai.response.finish_reasons": ["stop"],
    });
    expect(answered.startTime >= failed.endTime || answered.startTime[0] >= failed.endTime[0]).toBe(true);
  });

  it("ends every span of a cancelled run, the tool call and its step as errors", async () => {
    const server = await startOpenAIServer({ replies: [{ content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "c1", name: "wait", arguments: {} }] }] });
    servers.push(server);
    const file = writeTeam(`version: 1
name: cancel
models:
  default: { provider: openai, model: m, base_url: "${server.url}", api_key: sk-cancel-0123456789, max_retries: 0 }
agents:
  solver: { kind: react, tools: [wait] }
`);
    const wait = defineTool({
      name: "wait",
      description: "Waits until aborted.",
      parameters: { type: "object" },
      execute: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener("abort", () => resolve("stopped"))),
    });
    const { exporter, provider } = appTelemetry();
    const telemetry = await startTelemetry({ tracerProvider: provider });
    const controller = new AbortController();
    const sink = telemetry.sink();
    const result = await runTeam(await loadTeam(file, { tools: [wait] }), {
      input: "wait",
      traceDir: tempDir(),
      tools: [wait],
      signal: controller.signal,
      sinks: [sink, (e) => e.type === "tool.started" && setTimeout(() => controller.abort(), 20)],
    }).result;
    expect(result.interrupted).toBe(true);
    const spans = exporter.getFinishedSpans();
    const tool = spans.find((s) => s.name === "execute_tool wait")!;
    const step = spans.find((s) => s.name === "invoke_agent solver")!;
    expect(tool.status).toMatchObject({ code: 2, message: "aborted" });
    expect(step.status.code).toBe(2);
    expect(parentId(tool)).toBe(step.spanContext().spanId);
    // The step's first model call answered; the one after the abort failed with it.
    expect(spans.filter((s) => s.name === "chat m").map((s) => s.status.code)).toEqual([0, 2]);
  });

  it("ends what is still open when the run finishes, innermost first, as errors", async () => {
    const { exporter, provider } = appTelemetry();
    const sink = (await startTelemetry({ tracerProvider: provider })).sink();
    const base = { ts: "", task_id: "t1", agent_id: "boss" };
    let seq = 0;
    const emit = (e: Record<string, unknown>) => sink({ ...base, seq: ++seq, ...e } as unknown as Parameters<typeof sink>[0]);
    emit({ type: "run.started", input: "go" });
    emit({ type: "agent.started", kind: "react", input: "go", step_id: "s1" });
    emit({ type: "tool.started", tool: "helper", call_id: "c1", arguments: {}, step_id: "s1" });
    emit({ type: "agent.started", kind: "react", input: "help", step_id: "s2", parent_step_id: "s1", agent_id: "helper" });
    emit({ type: "llm.request", model: "m", messages: 2, step_id: "s2", agent_id: "helper" });
    emit({ type: "run.finished", result_type: "error", error: "crashed", usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 } });
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(["chat m", "invoke_agent helper", "execute_tool helper", "invoke_agent boss"]);
    for (const span of spans) expect(span.status).toEqual({ code: 2, message: "the run ended before this finished" });
    const [, helper, tool, boss] = spans;
    expect(parentId(helper!)).toBe(tool!.spanContext().spanId);
    expect(parentId(tool!)).toBe(boss!.spanContext().spanId);
  });

  it("is requested by an OTLP endpoint or --otel, and never when the SDK is disabled", () => {
    expect(telemetryRequested({})).toBe(false);
    expect(telemetryRequested({}, true)).toBe(true);
    expect(telemetryRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" })).toBe(true);
    expect(telemetryRequested({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "http://collector:4318/v1/traces" })).toBe(true);
    expect(telemetryRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: " " })).toBe(false);
    expect(telemetryRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" }, true)).toBe(false);
    expect(telemetryRequested({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })).toBe(false);
  });
});
