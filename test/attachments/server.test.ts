/**
 * Attachments through `runtime serve` (docs/attachments.md): the HTTP API's
 * `attachments`, the OpenAI-compatible endpoint's `image_url` parts (with
 * the real openai client) and A2A raw file parts reach the team's model (the
 * project's OpenAI-compatible test server) as the image part of the run's
 * first user message; a model that takes no images is a 400 before any request.
 */
import { Role, TaskState, type Message } from "@a2a-js/sdk";
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { a2aClient } from "../support/a2a.js";
import { startOpenAIServer, type OpenAIServer } from "../support/openai-server.js";
import { runCli } from "../support/cli.js";
import { postRun, serveTeam, spawnServe } from "../support/runtime-server.js";
import { reactReply, writeTeam } from "../support/team.js";
import { PNG, PNG_URL } from "../support/attachments.js";

const closers: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()?.close();
});

const lookerTeam = (url: string, attachments: string) =>
  writeTeam(`version: 1
name: looker
models:
  default: { provider: openai, model: test-model, base_url: "${url}", api_key: sk-looker-0123456789, max_retries: 0, attachments: ${attachments} }
agents:
  looker: { kind: react }
`);

async function setup(attachments = "[image]") {
  const model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "a red dot" }) }) });
  closers.push(model);
  const server = await serveTeam(lookerTeam(model.url, attachments));
  closers.push(server);
  return { model, server };
}

/** The first user message the model was sent. */
const firstUser = (model: OpenAIServer) => model.chatRequests[0]?.body?.messages?.[0];
const withImage = (text: string) => ({
  role: "user",
  content: [
    { type: "text", text },
    { type: "image_url", image_url: { url: PNG_URL } },
  ],
});

describe("attachments through the server", () => {
  it("POST /v1/runs takes attachments [{name, media_type, data}] and its events carry no bytes", async () => {
    const { model, server } = await setup();
    const { response, events } = await postRun(
      server.url,
      { input: "What is in this picture?", attachments: [{ name: "pic.png", media_type: "image/png", data: PNG.toString("base64") }] },
      server.token,
    );
    expect(response.status).toBe(200);
    expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", answer: "a red dot" });
    expect(firstUser(model)).toEqual(withImage("What is in this picture?"));
    expect(JSON.stringify(events)).not.toContain(PNG.toString("base64"));
    expect(events[0]?.data).toMatchObject({ type: "run.started", attachments: [{ name: "pic.png", media_type: "image/png", size: PNG.length }] });
  });

  it("POST /v1/runs refuses with a 400, before any request, bad data and a model that takes no images", async () => {
    const { model, server } = await setup("[]");
    const post = async (body: unknown) => {
      const response = await server.fetch(`${server.url}/v1/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: (await response.json()) as { error?: string } };
    };
    const bad = await post({ input: "?", attachments: [{ name: "a.png", data: "not base64!" }] });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("attachments[0].data must be the file's bytes in base64");
    const refused = await post({ input: "?", attachments: [{ name: "a.png", data: PNG.toString("base64") }] });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain("model default of agent looker takes no image attachments");
    expect(model.requests).toHaveLength(0);
  });

  it("the OpenAI-compatible endpoint passes an image_url part (a data: URL) through, and refuses a link", async () => {
    const { model, server } = await setup();
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: server.token, maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: "looker",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "What is in this picture?" },
            { type: "image_url", image_url: { url: PNG_URL } },
          ],
        },
      ],
    });
    expect(completion.choices[0]?.message.content).toBe("a red dot");
    expect(firstUser(model)).toEqual(withImage("What is in this picture?"));
    await expect(
      client.chat.completions.create({
        model: "looker",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "?" },
              { type: "image_url", image_url: { url: "https://example.com/a.png" } },
            ],
          },
        ],
      }),
    ).rejects.toThrow(/must be a data: URL/);
    expect(model.chatRequests).toHaveLength(1);
  });

  it("an A2A message's raw file part is the run's attachment", async () => {
    const { model, server } = await setup();
    const client = await a2aClient(server.url, server.token);
    const message: Message = {
      messageId: crypto.randomUUID(),
      contextId: "",
      taskId: "",
      role: Role.ROLE_USER,
      parts: [
        { content: { $case: "text", value: "What is in this picture?" }, mediaType: "text/plain", filename: "", metadata: {} },
        { content: { $case: "raw", value: PNG }, mediaType: "image/png", filename: "pic.png", metadata: {} },
      ],
      metadata: {},
      extensions: [],
      referenceTaskIds: [],
    };
    const sent = await client.sendMessage({ tenant: "", message, configuration: undefined, metadata: {} });
    expect((sent as { status?: { state?: unknown } }).status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(firstUser(model)).toEqual(withImage("What is in this picture?"));
  });

  it("runtime serve --max-body-mb lets a larger file in; the default 1 MiB answers 413", async () => {
    const model = await startOpenAIServer({ respond: () => ({ content: reactReply("ANSWER", { answer: "a big picture" }) }) });
    closers.push(model);
    const file = lookerTeam(model.url, "[image]");
    expect((await runCli(["serve", file, "--max-body-mb", "0"])).code).toBe(2);
    const big = Buffer.concat([PNG, Buffer.alloc(1536 * 1024)]);
    const body = { input: "What is it?", attachments: [{ name: "big.png", data: big.toString("base64") }] };
    for (const [mb, status] of [
      ["1", 413],
      ["3", 200],
    ] as const) {
      const served = await spawnServe([file, "--max-body-mb", mb]);
      try {
        const { response, events } = await postRun(served.url, body, served.token);
        expect(response.status).toBe(status);
        if (status === 200) expect(events.at(-1)?.data).toMatchObject({ type: "run.finished", answer: "a big picture" });
      } finally {
        await served.stop();
      }
    }
    expect(model.chatRequests).toHaveLength(1);
    expect(JSON.stringify(model.chatRequests[0]?.body)).toContain(big.toString("base64"));
  });
});
