/**
 * OpenTelemetry export (docs/telemetry.md), through the real surface: the
 * spawned CLI runs a plan_solver team against the OpenAI-compatible test
 * server (with an API key), and an OTLP/HTTP receiver of this test on
 * 127.0.0.1 gets the spans (the exporter's JSON encoding).
 */
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { postRun, spawnServe } from "../support/runtime-server.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";
import { answer, badRequest, queryOf, roleOf } from "../support/flows.js";

const API_KEY = "sk-otel-test-9f8e7d6c5b4a39281706";

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  status?: { code?: number; message?: string };
  attributes: Record<string, unknown>;
}

/** An OTLP/HTTP collector: POST /v1/traces with the JSON encoding, every request kept as received. */
async function startCollector(): Promise<{ url: string; received: Received[]; spans(): Span[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    received,
    spans: () => received.flatMap((r) => spansOf(JSON.parse(r.body) as OtlpBody)),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

type OtlpValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: OtlpValue[] } };
type OtlpBody = {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: OtlpValue }> };
    scopeSpans: Array<{ spans: Array<Omit<Span, "attributes"> & { attributes: Array<{ key: string; value: OtlpValue }> }> }>;
  }>;
};

function otlpValueOf(v: OtlpValue): unknown {
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(otlpValueOf);
  if (v.intValue !== undefined) return Number(v.intValue);
  return v.stringValue ?? v.doubleValue ?? v.boolValue;
}

function spansOf(body: OtlpBody): Span[] {
  return body.resourceSpans.flatMap((rs) =>
    rs.scopeSpans.flatMap((ss) => ss.spans.map((s) => ({ ...s, attributes: Object.fromEntries(s.attributes.map((a) => [a.key, otlpValueOf(a.value)])) }))),
  );
}

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const answered = (body: ChatBody) => (body.messages ?? []).some((m) => m.role === "assistant");
const taskOf = (body: ChatBody) => /Your task is task \d+ of \d+: (.*)/.exec(queryOf(body))?.[1] ?? "?";

/**
 * The model behind a plan_solver run: a plan of two tasks; the solver of task 1
 * uses the calculator, the solver of task 2 calls the `checker` agent as a tool,
 * whose model call fails (a 400); the aggregator's answer quotes the API key,
 * which must come out masked.
 */
async function startModel(): Promise<OpenAIServer> {
  const server = await startOpenAIServer({
    apiKey: API_KEY,
    respond: (body): Reply => {
      switch (roleOf(body)) {
        case "planner":
          return answer(JSON.stringify({ steps: ["add the numbers", "check the sum"] }));
        case "solver": {
          if (answered(body)) return answer(`solved: ${taskOf(body)}`);
          const call =
            taskOf(body) === "add the numbers"
              ? { id: "call_add", name: "calculator", arguments: { expression: "6*7" } }
              : { id: "call_check", name: "checker", arguments: { query: "is 42 right?" } };
          return { content: reactReply("CALL_TOOL", {}), tool_calls: [call], usage: { prompt_tokens: 100, completion_tokens: 20 } };
        }
        case "checker":
          return badRequest("checker model quota exceeded");
        case "aggregator":
          return { content: reactReply("ANSWER", { answer: `42, checked with key ${API_KEY}` }), usage: { prompt_tokens: 300, completion_tokens: 30 } };
        default:
          return badRequest(`no route for ${roleOf(body)}`);
      }
    },
  });
  servers.push(server);
  return server;
}

function pipelineTeam(url: string): string {
  // No api_key in the file: the openai client takes OPENAI_API_KEY, which the runtime masks too.
  return writeTeam(`version: 1
name: otel-pipeline
models:
  default: { provider: openai, model: test-model, base_url: "${url}", max_retries: 0 }
agents:
  pipeline: { kind: plan_solver, planner: planner, solver: solver, aggregator: aggregator, concurrency: 2 }
  planner: { kind: react, prompt: "ROLE:planner" }
  solver: { kind: react, prompt: "ROLE:solver", tools: [calculator, checker] }
  checker: { kind: react, prompt: "ROLE:checker" }
  aggregator: { kind: react, prompt: "ROLE:aggregator" }
`);
}

async function exec(team: string, env: Record<string, string | undefined>, args: string[] = []) {
  return runCli(["exec", team, "What is 6 times 7, checked?", "--trace-dir", tempDir(), ...args], {
    env: {
      OPENAI_API_KEY: API_KEY,
      OPENAI_BASE_URL: undefined,
      // Only what a test sets: nothing of the OpenTelemetry set-up this process may have.
      ...Object.fromEntries(
        Object.keys(process.env)
          .filter((k) => k.startsWith("OTEL_"))
          .map((k) => [k, undefined]),
      ),
      ...env,
    },
    timeoutMs: 60_000,
  });
}

describe("OpenTelemetry spans of a run", () => {
  it("exports invoke_agent, chat and execute_tool spans of a plan_solver run, nested as the run nests, with gen_ai.* attributes and no API key", async () => {
    const model = await startModel();
    const collector = await startCollector();
    servers.push(collector);
    const run = await exec(pipelineTeam(model.url), { OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: "otel-test" });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("42, checked with key [REDACTED]\n");

    // Sent before the process ended, to <endpoint>/v1/traces, as OTLP JSON.
    expect(collector.received.length).toBeGreaterThan(0);
    for (const r of collector.received) {
      expect(r.path).toBe("/v1/traces");
      expect(r.headers["content-type"]).toBe("application/json");
      expect(JSON.stringify(r.headers)).not.toContain(API_KEY);
      expect(r.body).not.toContain(API_KEY);
    }
    const resource = (JSON.parse(collector.received[0]!.body) as OtlpBody).resourceSpans[0]!.resource.attributes;
    expect(resource).toContainEqual({ key: "service.name", value: { stringValue: "otel-test" } });

    const spans = collector.spans();
    const byId = new Map(spans.map((s) => [s.spanId, s]));
    const parentOf = (s: Span) => (s.parentSpanId ? byId.get(s.parentSpanId) : undefined);
    const named = (name: string) => spans.filter((s) => s.name === name);

    // One trace per run, its id the run's task_id.
    const taskId = String(spans[0]!.attributes["runtime.task_id"]);
    expect(new Set(spans.map((s) => s.traceId))).toEqual(new Set([taskId.replace(/-/g, "")]));
    expect(new Set(spans.map((s) => s.attributes["runtime.task_id"]))).toEqual(new Set([taskId]));

    // The shape: pipeline → planner, 2 solvers, aggregator; solver → calculator and checker tool calls; checker under its tool call.
    const roots = spans.filter((s) => !s.parentSpanId);
    expect(roots.map((s) => s.name)).toEqual(["invoke_agent pipeline"]);
    const root = roots[0]!;
    expect(root.attributes).toMatchObject({ "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "pipeline", "runtime.agent.kind": "plan_solver" });
    for (const name of ["invoke_agent planner", "invoke_agent solver", "invoke_agent aggregator"]) {
      expect(named(name).length, name).toBeGreaterThan(0);
      for (const span of named(name)) expect(parentOf(span), name).toBe(root);
    }
    expect(named("invoke_agent solver")).toHaveLength(2);
    const calculator = named("execute_tool calculator");
    const checkerTool = named("execute_tool checker");
    expect(calculator).toHaveLength(1);
    expect(checkerTool).toHaveLength(1);
    expect(parentOf(calculator[0]!)?.name).toBe("invoke_agent solver");
    expect(parentOf(checkerTool[0]!)?.name).toBe("invoke_agent solver");
    expect(calculator[0]!.attributes).toMatchObject({
      "gen_ai.operation.name": "execute_tool",
      "gen_ai.tool.name": "calculator",
      "gen_ai.tool.call.id": "call_add",
      "runtime.step_id": parentOf(calculator[0]!)!.attributes["runtime.step_id"],
    });
    expect(typeof calculator[0]!.attributes["runtime.trace_id"]).toBe("string");
    const checker = named("invoke_agent checker");
    expect(checker).toHaveLength(1);
    expect(parentOf(checker[0]!)).toBe(checkerTool[0]);

    // Every model call is a chat span of its step, with the GenAI attributes.
    const chats = named("chat test-model");
    expect(chats).toHaveLength(model.chatRequests.length);
    for (const chat of chats) {
      const step = parentOf(chat);
      expect(step?.name).toMatch(/^invoke_agent /);
      expect(chat.attributes["runtime.step_id"]).toBe(step?.attributes["runtime.step_id"]);
      expect(chat.attributes).toMatchObject({ "gen_ai.operation.name": "chat", "gen_ai.request.model": "test-model", "gen_ai.provider.name": "openai" });
      expect(chat.kind).toBe(3); // CLIENT
    }
    const ok = chats.filter((c) => c.status?.code !== 2);
    expect(ok).toHaveLength(chats.length - 1);
    for (const chat of ok) {
      expect(chat.attributes["gen_ai.response.model"]).toBe("test-model");
      expect(chat.attributes["gen_ai.usage.input_tokens"]).toEqual(expect.any(Number));
      expect(chat.attributes["gen_ai.usage.output_tokens"]).toEqual(expect.any(Number));
    }
    const aggregatorChat = chats.find((c) => parentOf(c)?.name === "invoke_agent aggregator")!;
    expect(aggregatorChat.attributes).toMatchObject({
      "gen_ai.usage.input_tokens": 300,
      "gen_ai.usage.output_tokens": 30,
      "gen_ai.response.finish_reasons": ["stop"],
    });
    const toolChats = chats.filter((c) => c.attributes["gen_ai.response.finish_reasons"]?.toString() === "tool_calls");
    expect(toolChats).toHaveLength(2);

    // Errors are span status: the checker's model call, the checker step, and the tool call that called it.
    const failedChat = chats.find((c) => c.status?.code === 2)!;
    expect(parentOf(failedChat)).toBe(checker[0]);
    expect(failedChat.status?.message).toMatch(/checker model quota exceeded/);
    expect(failedChat.attributes["error.type"]).toBe("_OTHER");
    expect(checker[0]!.status?.code).toBe(2);
    // A step's error carries its code as its type.
    expect(checker[0]!.attributes["error.type"]).toBe("MODEL_UNAVAILABLE");
    expect(checkerTool[0]!.status?.code).toBe(2);
    expect(root.status?.code ?? 0).toBe(0);

    // Children lie within their parents in time (events carry millisecond times: a parent may end in the same one).
    const ms = 1_000_000n;
    for (const span of spans) {
      const parent = parentOf(span);
      if (!parent) continue;
      expect(BigInt(span.startTimeUnixNano) + ms >= BigInt(parent.startTimeUnixNano), span.name).toBe(true);
      expect(BigInt(span.endTimeUnixNano) <= BigInt(parent.endTimeUnixNano) + ms, span.name).toBe(true);
    }

    // Content is not captured unless asked for.
    for (const span of spans) {
      for (const key of ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result"]) {
        expect(span.attributes[key], `${span.name} ${key}`).toBeUndefined();
      }
    }
    const all = collector.received.map((r) => r.body).join("\n");
    expect(all).not.toContain("6*7");
    expect(all).not.toContain("42, checked");
  });

  it("captures prompts, answers, tool arguments and results when asked to, masked like events", async () => {
    const model = await startModel();
    const collector = await startCollector();
    servers.push(collector);
    const run = await exec(pipelineTeam(model.url), {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: "true",
    });
    expect(run.code).toBe(0);
    const spans = collector.spans();
    const root = spans.find((s) => !s.parentSpanId)!;
    expect(JSON.parse(String(root.attributes["gen_ai.input.messages"]))).toEqual([
      { role: "user", parts: [{ type: "text", content: "What is 6 times 7, checked?" }] },
    ]);
    expect(JSON.parse(String(root.attributes["gen_ai.output.messages"]))).toEqual([
      { role: "assistant", parts: [{ type: "text", content: "42, checked with key [REDACTED]" }], finish_reason: "stop" },
    ]);
    const calculator = spans.find((s) => s.name === "execute_tool calculator")!;
    expect(JSON.parse(String(calculator.attributes["gen_ai.tool.call.arguments"]))).toEqual({ expression: "6*7" });
    expect(JSON.parse(String(calculator.attributes["gen_ai.tool.call.result"]))).toMatchObject({ result: 42 });
    const toolCall = spans.find((s) => s.name === "chat test-model" && String(s.attributes["gen_ai.output.messages"]).includes("tool_call"))!;
    expect(JSON.parse(String(toolCall.attributes["gen_ai.output.messages"]))[0].parts).toContainEqual(
      expect.objectContaining({ type: "tool_call", name: expect.stringMatching(/^(calculator|checker)$/) }),
    );
    for (const r of collector.received) expect(r.body).not.toContain(API_KEY);
    expect(collector.received.map((r) => r.body).join("")).toContain("[REDACTED]");
  });

  it("a dead collector costs one warning, not the run: the answer, exit 0, within the export timeout", async () => {
    const model = await startModel();
    // A port that was just free: nothing listens there.
    const closed = await startCollector();
    await closed.close();
    const started = Date.now();
    const run = await exec(pipelineTeam(model.url), {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://user:${API_KEY}@${closed.url.slice("http://".length)}`,
      OTEL_EXPORTER_OTLP_TIMEOUT: "1000",
    });
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("42, checked with key [REDACTED]\n");
    const warnings = run.stderr.trim().split("\n");
    expect(warnings).toEqual([
      expect.stringMatching(/^runtime exec: warning: cannot send spans to http:\/\/\[REDACTED\]@127\.0\.0\.1:\d+\/v1\/traces: .*ECONNREFUSED/),
    ]);
    expect(run.stderr).not.toContain(API_KEY);
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("loads and sends nothing unless asked: the SDK is not even imported; --otel or the endpoint variable turns it on, OTEL_SDK_DISABLED off", async () => {
    const model = await startModel();
    const collector = await startCollector();
    servers.push(collector);
    const team = pipelineTeam(model.url);
    // NODE_DEBUG=module names each CommonJS package as it is loaded; the OpenTelemetry packages are such.
    const off = await exec(team, { NODE_DEBUG: "module", OTEL_EXPORTER_OTLP_ENDPOINT: undefined, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined });
    expect(off.code).toBe(0);
    expect(off.stderr).not.toContain("opentelemetry");
    const disabled = await exec(team, { NODE_DEBUG: "module", OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SDK_DISABLED: "true" });
    expect(disabled.code).toBe(0);
    expect(disabled.stderr).not.toContain("opentelemetry");
    expect(collector.received).toHaveLength(0);

    // --otel with only the traces endpoint set (the whole URL, used as it is).
    const on = await exec(team, { NODE_DEBUG: "module", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/custom/traces` }, ["--otel"]);
    expect(on.code).toBe(0);
    expect(on.stderr).toContain("opentelemetry");
    expect(collector.received.length).toBeGreaterThan(0);
    expect(new Set(collector.received.map((r) => r.path))).toEqual(new Set(["/custom/traces"]));
  });

  it("an endpoint that is not a URL is a usage error, before anything runs", async () => {
    const model = await startModel();
    const run = await exec(pipelineTeam(model.url), { OTEL_EXPORTER_OTLP_ENDPOINT: "collector:4318" });
    expect(run.code).toBe(2);
    expect(run.stderr).toBe("runtime exec: the OTLP endpoint collector:4318/v1/traces is not an http or https URL (spans are sent over OTLP/HTTP)\n");
    expect(model.chatRequests).toHaveLength(0);
  });

  it("runtime serve --otel exports each run's spans, and sends the last ones when it stops", async () => {
    const collector = await startCollector();
    servers.push(collector);
    // Only this endpoint: any other OTEL_ setting of the machine's is unset for the server.
    const env: Record<string, string | undefined> = { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${collector.url}/v1/traces` };
    for (const key of Object.keys(process.env)) if (key.startsWith("OTEL_") && !(key in env)) env[key] = undefined;
    const { child, url, token, exited, output } = await spawnServe(["teams/circle-react.yaml", "--otel"], { env });
    let taskId = "";
    try {
      const { events } = await postRun(url, { input: "What are the area and circumference of a circle with radius 5 meters?" }, token);
      const finished = events.at(-1)?.data as { type: string; task_id: string };
      expect(finished.type).toBe("run.finished");
      taskId = finished.task_id;
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    expect(output()).toContain(`sending spans to ${collector.url}/v1/traces`);
    const spans = collector.spans();
    expect(spans.find((s) => !s.parentSpanId)).toMatchObject({ name: "invoke_agent solver", traceId: taskId.replace(/-/g, "") });
    expect(spans.filter((s) => s.name === "execute_tool calculator")).toHaveLength(2);
    expect(spans.filter((s) => s.name === "chat scripted").length).toBeGreaterThan(0);
  });
});
