/**
 * OpenAI-compatible serving (docs/protocols.md#openai-compatible), driven by
 * the real `openai` client and the AI SDK over HTTP against `runtime serve`,
 * whose team's model is the project's OpenAI-compatible test server.
 */
import { createOpenAICompatible } from "@ai-sdk/openai-compatible";
import { generateText, streamText } from "ai";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { eventually, serveTeam } from "../support/runtime-server.js";
import { loadTeam } from "../../src/config/load.js";
import { startServer } from "../../src/server/server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

/** A two-agent react team on the test server; `approval` makes the calculator wait for a person. */
function team(url: string, approval = false, stream = false): string {
  return writeTeam(`version: 1
name: helpdesk
models:
  default:
    provider: openai
    model: test-model
    base_url: ${url}
    api_key: sk-test-model-key
    timeout_ms: 20000
    max_retries: 0${stream ? "\n    stream: true" : ""}
agents:
  solver:
    kind: react
    description: answers with the calculator
    tools: [calculator]${approval ? "\n    approval: { calculator: required }" : ""}
  writer:
    kind: react
    description: writes
`);
}

/** What the model was asked, as one text (every message of every request). */
const asked = (model: OpenAIServer, index: number) => JSON.stringify(model.chatRequests[index]?.body?.messages ?? []);

async function setup(respond: (body: ChatBody, index: number) => Reply, approval = false, stream = false) {
  const model = await startOpenAIServer({ respond });
  closers.push(model);
  const server = await serveTeam(team(model.url, approval, stream));
  closers.push(server);
  const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 });
  return { model, server, client };
}

const answer = (text: string, usage = { prompt_tokens: 11, completion_tokens: 7 }): Reply => ({ content: reactReply("ANSWER", { answer: text }), usage });

describe("OpenAI-compatible serving: the openai client", () => {
  it("lists the team's agents as models, the entry agent under the team's name too", async () => {
    const { client } = await setup(() => answer("-"));
    const ids = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(["helpdesk", "solver", "writer"]);
    expect((await client.models.retrieve("writer")).object).toBe("model");
  });

  it("answers a chat completion with the run's answer, its usage and its task_id; the run is an ordinary run", async () => {
    const { client, server, model } = await setup(() => answer("It is 4."));
    const { data, response } = await client.chat.completions
      .create({ model: "helpdesk", messages: [{ role: "user", content: "What is 2 + 2?" }] })
      .withResponse();
    expect(data.choices[0]?.message.content).toBe("It is 4.");
    expect(data.choices[0]?.finish_reason).toBe("stop");
    expect(data.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    const taskId = response.headers.get("x-task-id")!;
    expect(data.id).toBe(`chatcmpl-${taskId}`);
    expect(asked(model, 0)).toContain("What is 2 + 2?");
    const runs = (await (await server.fetch(`${server.url}/v1/runs`)).json()) as { runs: { task_id: string; agent_id: string; answer: string }[] };
    expect(runs.runs.find((r) => r.task_id === taskId)).toMatchObject({ agent_id: "solver", answer: "It is 4." });
  });

  it("streams chunks with the answer as content and a last usage chunk", async () => {
    const { client } = await setup(() => answer("Streamed answer."));
    const stream = await client.chat.completions.create({
      model: "writer",
      messages: [{ role: "user", content: "Write something." }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.map((c) => c.choices[0]?.delta.content ?? "").join("")).toBe("Streamed answer.");
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop");
    expect(chunks.at(-1)?.choices).toEqual([]);
    expect(chunks.at(-1)?.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 });
    expect(new Set(chunks.map((c) => c.id)).size).toBe(1);
  });

  it("streams the answer as the model writes it: a model stalled mid-answer has already given its first words", async () => {
    const text = "The area of the circle is 78.54 square metres and its circumference is 31.42 metres.";
    const content = reactReply("ANSWER", { answer: text });
    // 4 characters a chunk, after the role chunk: stall the model two thirds of the way into the answer.
    const stallAt = 1 + Math.ceil((content.indexOf(text) + (2 * text.length) / 3) / 4);
    const { client, server } = await setup(() => ({ content, stall_after_chunks: stallAt }), false, true);
    const stream = await client.chat.completions.create({ model: "helpdesk", messages: [{ role: "user", content: "Area?" }], stream: true });
    let given = "";
    let pieces = 0;
    for await (const chunk of stream) {
      const piece = chunk.choices[0]?.delta.content ?? "";
      if (piece) pieces++;
      given += piece;
      // The model never sends the rest: the loop ends here or the test times out.
      if (given.length >= text.length / 2) break;
    }
    // Only the answer's text, in order, in several pieces, while the run has not ended (its model is stalled).
    expect(pieces).toBeGreaterThan(3);
    expect(text.startsWith(given)).toBe(true);
    expect(given.length).toBeGreaterThanOrEqual(text.length / 2);
    await server.close();
  });

  it("streams the whole answer as content deltas, in chat completions and in Responses events, when the model streams", async () => {
    const text = "Paris is the capital of France, on the Seine.";
    const { client } = await setup(() => answer(text), false, true);
    const chat = await client.chat.completions.create({ model: "helpdesk", messages: [{ role: "user", content: "Capital?" }], stream: true });
    const deltas: string[] = [];
    for await (const chunk of chat) if (chunk.choices[0]?.delta.content) deltas.push(chunk.choices[0].delta.content);
    expect(deltas.join("")).toBe(text);
    expect(deltas.length).toBeGreaterThan(3);
    const responses = client.responses.stream({ model: "helpdesk", input: "Capital?" });
    const textDeltas: string[] = [];
    for await (const event of responses) if (event.type === "response.output_text.delta") textDeltas.push(event.delta);
    expect(textDeltas.join("")).toBe(text);
    expect(textDeltas.length).toBeGreaterThan(3);
    expect((await responses.finalResponse()).output_text).toBe(text);
  });

  it("gives the agent the earlier turns of the messages, as a session's history", async () => {
    const { client, model } = await setup(() => answer("12."));
    const reply = await client.chat.completions.create({
      model: "solver",
      messages: [
        { role: "system", content: "You are a chat front end." },
        { role: "user", content: "How many eggs in a dozen?" },
        { role: "assistant", content: "A dozen is twelve eggs." },
        { role: "user", content: "And in half of that?" },
      ],
    });
    expect(reply.choices[0]?.message.content).toBe("12.");
    const messages = model.chatRequests[0]?.body?.messages ?? [];
    const request = String(messages.find((m) => m.role === "user")?.content);
    expect(request).toContain("User: How many eggs in a dozen?");
    expect(request).toContain("Assistant: A dozen is twelve eggs.");
    expect(request).toMatch(/Current request:\s*And in half of that\?/);
    expect(asked(model, 0)).not.toContain("You are a chat front end.");
  });

  it("continues a response chain with previous_response_id, and streams Responses events", async () => {
    const { client, model } = await setup((_b, i) => answer(i === 0 ? "Paris." : "About 2.1 million."));
    const first = await client.responses.create({ model: "helpdesk", input: "What is the capital of France?" });
    expect(first.output_text).toBe("Paris.");
    expect(first.status).toBe("completed");
    expect(first.usage?.total_tokens).toBe(18);
    expect(first.id).toMatch(/^resp_/);

    const stream = client.responses.stream({ model: "helpdesk", input: "How many people live there?", previous_response_id: first.id });
    const types: string[] = [];
    let text = "";
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.output_text.delta") text += event.delta;
    }
    const second = await stream.finalResponse();
    expect(text).toBe("About 2.1 million.");
    expect(second.output_text).toBe("About 2.1 million.");
    expect(second.previous_response_id).toBe(first.id);
    expect(second.metadata?.session_id).toBe(first.metadata?.session_id);
    expect(second.usage?.output_tokens).toBe(7);
    // The frames the Responses API sends, in its order (clients build the output from the .done frames or from response.completed).
    expect(types.filter((t) => t !== "response.output_text.delta")).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    // The second run is in the first one's session: its model heard the first turn.
    expect(asked(model, 1)).toContain("What is the capital of France?");
    expect(asked(model, 1)).toContain("Paris.");

    const missing = await client.responses.create({ model: "helpdesk", input: "x", previous_response_id: "resp_nope" }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.NotFoundError);
    expect((missing as InstanceType<typeof OpenAI.NotFoundError>).param).toBe("previous_response_id");
  });

  it("refuses a missing or wrong token (401) and an unknown model (404) in OpenAI's error shape", async () => {
    const { server } = await setup(() => answer("-"));
    const wrong = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "not-the-token", maxRetries: 0 });
    const refused = await wrong.models.list().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((refused as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe("invalid_api_key");

    const bare = await fetch(`${server.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(bare.status).toBe(401);
    expect(await bare.json()).toEqual({
      error: { message: expect.stringContaining("token"), type: "invalid_request_error", param: null, code: "invalid_api_key" },
    });

    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 });
    const unknown = await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "hi" }] }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe("model_not_found");
    expect((unknown as Error).message).toContain("helpdesk, solver, writer");

    const bad = await client.chat.completions.create({ model: "solver", messages: [{ role: "assistant", content: "hi" }] }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect((bad as InstanceType<typeof OpenAI.BadRequestError>).param).toBe("messages");
  });

  it("says a run waits for approval, names how to give it, and the approvals API continues the run with its history", async () => {
    const { client, server, model } = await setup(
      (_b, i) =>
        i === 0
          ? { content: reactReply("CALL_TOOL", {}), tool_calls: [{ id: "c1", name: "calculator", arguments: { expression: "6 * 7" } }] }
          : answer("The answer is 42."),
      true,
    );
    const { data, response } = await client.chat.completions
      .create({
        model: "solver",
        messages: [
          { role: "user", content: "Call me Ada." },
          { role: "assistant", content: "Hello, Ada." },
          { role: "user", content: "6 times 7?" },
        ],
      })
      .withResponse();
    const taskId = response.headers.get("x-task-id")!;
    const note = data.choices[0]?.message.content ?? "";
    expect(note).toContain(taskId);
    expect(note).toContain("calculator");
    expect(note).toContain(`/v1/runs/${taskId}/approvals`);

    const decided = await server.fetch(`${server.url}/v1/runs/${taskId}/approvals`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ decision: "approve" }),
    });
    expect(decided.status).toBe(202);
    const run = await eventually(async () => {
      const got = (await (await server.fetch(`${server.url}/v1/runs/${taskId}`)).json()) as { run: { result_type?: string; answer?: string } };
      return got.run.result_type === "answer" ? got.run : undefined;
    });
    expect(run.answer).toBe("The answer is 42.");
    // The resumed run asked its model with the conversation the client had given.
    expect(asked(model, 1)).toContain("Hello, Ada.");
  });

  it("answers the token's rate limit with OpenAI's 429", async () => {
    const model = await startOpenAIServer({ respond: () => answer("-") });
    closers.push(model);
    const server = await startServer({ team: await loadTeam(team(model.url)), traceDir: tempDir("openai-rate-"), port: 0, rate: 1 });
    closers.push(server);
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 });
    const outcomes = await Promise.all(
      Array.from({ length: 4 }, () =>
        client.models.list().then(
          () => "ok",
          (e: unknown) => e,
        ),
      ),
    );
    const limited = outcomes.find((o) => o instanceof OpenAI.RateLimitError) as InstanceType<typeof OpenAI.RateLimitError> | undefined;
    expect(limited?.code).toBe("rate_limit_exceeded");
    expect(limited?.headers.get("retry-after")).toBe("1");
  });

  it("cancels the run when the client closes a streaming request", async () => {
    const { client, server } = await setup(() => ({ ...answer("too late"), delay_ms: 15_000 }));
    const controller = new AbortController();
    const { data: stream, response } = await client.chat.completions
      .create({ model: "solver", messages: [{ role: "user", content: "slow" }], stream: true }, { signal: controller.signal })
      .withResponse();
    const taskId = response.headers.get("x-task-id")!;
    for await (const _ of stream) {
      controller.abort();
      break;
    }
    const run = await eventually(async () => {
      const got = (await (await server.fetch(`${server.url}/v1/runs/${taskId}`)).json()) as { run: { result_type?: string; error?: string } };
      return got.run.result_type ? got.run : undefined;
    });
    expect(run).toMatchObject({ result_type: "error", error: "interrupted" });
  });
});

describe("OpenAI-compatible serving: the AI SDK", () => {
  it("generates and streams text through createOpenAICompatible", async () => {
    const { server, model } = await setup((_b, i) => answer(i === 0 ? "Generated." : "Streamed by the SDK."));
    const provider = createOpenAICompatible({ name: "runtime", baseURL: `${server.url}/v1`, apiKey: server.token, includeUsage: true });
    const generated = await generateText({
      model: provider("helpdesk"),
      messages: [
        { role: "user", content: "Remember the word kiwi." },
        { role: "assistant", content: "Kiwi, noted." },
        { role: "user", content: "Say something." },
      ],
    });
    expect(generated.text).toBe("Generated.");
    expect(generated.usage.outputTokens).toBe(7);
    expect(asked(model, 0)).toContain("Remember the word kiwi.");

    const streamed = streamText({ model: provider("writer"), prompt: "Stream something." });
    let text = "";
    for await (const delta of streamed.textStream) text += delta;
    expect(text).toBe("Streamed by the SDK.");
    expect((await streamed.usage).inputTokens).toBe(11);
  });
});
