import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { roleSequence, startOpenAIServer, strictProblems, type ChatBody, type OpenAIServer, type OpenAIServerOptions } from "./openai-server.js";

let server: OpenAIServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function setup(options: OpenAIServerOptions) {
  server = await startOpenAIServer(options);
  const client = new OpenAI({ baseURL: server.url, apiKey: "sk-test", maxRetries: 0 });
  return { server, client };
}

type Msg = Record<string, unknown>;
const user = (content: string): Msg => ({ role: "user", content });
const system = (content: string): Msg => ({ role: "system", content });
const assistant = (content: string | null, calls: Array<{ id: string; name?: string; args?: string }> = []): Msg => ({
  role: "assistant",
  content,
  ...(calls.length > 0
    ? { tool_calls: calls.map((c) => ({ id: c.id, type: "function", function: { name: c.name ?? "calc", arguments: c.args ?? "{}" } })) }
    : {}),
});
const tool = (id: string, content = "42"): Msg => ({ role: "tool", tool_call_id: id, content });

const ask = { model: "test-model", messages: [{ role: "user" as const, content: "hello" }] };

/** POSTs a chat request with plain fetch. */
function post(body: Msg, init: RequestInit = {}): Promise<Response> {
  return fetch(`${server?.url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "test-model", ...body }),
    ...init,
  });
}

/** The parsed `data:` events of an SSE body ("[DONE]" kept as the string). */
async function events(res: Response): Promise<unknown[]> {
  const text = await res.text();
  return text
    .split("\n\n")
    .filter((e) => e.startsWith("data: "))
    .map((e) => e.slice(6))
    .map((d) => (d === "[DONE]" ? d : JSON.parse(d)));
}

type Chunk = { choices: Array<{ delta: Record<string, unknown>; finish_reason: string | null }>; usage?: unknown };
const deltas = (evs: unknown[]) => evs.filter((e): e is Chunk => typeof e === "object").flatMap((e) => e.choices.map((c) => c.delta));
const joined = (ds: Array<Record<string, unknown>>, key: string) =>
  ds
    .map((d) => d[key])
    .filter((v) => typeof v === "string")
    .join("");

async function errorOf(p: Promise<unknown>): Promise<Error & { status?: number }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { status?: number };
  }
  throw new Error("expected a rejection");
}

describe("reasoning", () => {
  it("think_tags (the default) writes a think block before the content, streamed as content", async () => {
    const { client } = await setup({
      replies: [
        { reasoning: "2+2 is 4", content: "4" },
        { reasoning: "hmm", content: "ok" },
      ],
    });
    const res = await client.chat.completions.create(ask);
    expect(res.choices[0]?.message.content).toBe("<think>\n2+2 is 4\n</think>\n\n4");
    const streamed = deltas(await events(await post({ ...ask, stream: true })));
    expect(joined(streamed, "content")).toBe("<think>\nhmm\n</think>\n\nok");
  });

  it("reasoning_content: a field, streamed before any content; a request sending it back gets DeepSeek's 400", async () => {
    const { client, server } = await setup({
      dialect: { reasoning: "reasoning_content" },
      chunk_size: 3,
      replies: [{ reasoning: "think hard", content: "answer" }, { reasoning: "again", content: "streamed" }, { content: "third" }],
    });
    const res = await client.chat.completions.create(ask);
    const message = res.choices[0]?.message as unknown as Msg;
    expect(message["reasoning_content"]).toBe("think hard");
    expect(message["content"]).toBe("answer");

    const stream = await client.chat.completions.create({ ...ask, stream: true });
    const order: string[] = [];
    let reasoning = "";
    let content = "";
    for await (const chunk of stream) {
      const delta = (chunk.choices[0]?.delta ?? {}) as Msg;
      if (typeof delta["reasoning_content"] === "string") {
        reasoning += delta["reasoning_content"];
        order.push("r");
      }
      if (typeof delta["content"] === "string" && delta["content"] !== "") {
        content += delta["content"];
        order.push("c");
      }
    }
    expect(reasoning).toBe("again");
    expect(content).toBe("streamed");
    expect(order.join("")).toMatch(/^r+c+$/);

    const sentBack = [user("hi"), { role: "assistant", content: "answer", reasoning_content: "think hard" }, user("more")];
    const err = await errorOf(client.chat.completions.create({ model: "m", messages: sentBack as never }));
    expect(err.status).toBe(400);
    expect(err.message).toContain("Please remove the reasoning_content from your input.");
    // the refused request consumed no reply
    expect((await client.chat.completions.create(ask)).choices[0]?.message.content).toBe("third");
    expect(server.chatRequests).toHaveLength(4);
  });

  it("reasoning (OpenRouter): the field is named reasoning and sending it back is fine", async () => {
    const { client } = await setup({
      dialect: { reasoning: "reasoning" },
      replies: [
        { reasoning: "because", content: "yes" },
        { reasoning: "so", content: "no" },
      ],
    });
    const res = await client.chat.completions.create({
      model: "m",
      messages: [user("q"), { role: "assistant", content: "a", reasoning: "r" }, user("q2")] as never,
    });
    expect((res.choices[0]!.message as unknown as Msg)["reasoning"]).toBe("because");
    const streamed = deltas(await events(await post({ ...ask, stream: true })));
    expect(joined(streamed, "reasoning")).toBe("so");
    expect(joined(streamed, "content")).toBe("no");
    expect(streamed.some((d) => "reasoning_content" in d)).toBe(false);
  });
});

describe("role rules", () => {
  const calls = [{ id: "c1" }];

  it("alternate: accepts system first, tool turns apart from the alternation (as Mistral's template), refuses the rest vLLM-style", async () => {
    const { client, server } = await setup({ dialect: { roles: "alternate" }, respond: () => ({ content: "ok" }) });
    const fine = [system("s"), user("u"), assistant(null, calls), tool("c1"), assistant("done"), user("u2")];
    expect((await client.chat.completions.create({ model: "m", messages: fine as never })).choices[0]?.message.content).toBe("ok");

    const bad = [
      [user("a"), user("b")],
      [user("a"), system("late")],
      [assistant("first"), user("u")],
      [user("u"), tool("c1")],
      [user("u"), assistant(null, calls), tool("c1"), user("again")],
    ];
    for (const messages of bad) {
      const err = await errorOf(client.chat.completions.create({ model: "m", messages: messages as never }));
      // The flat vLLM body has no nested `error`, so the bare openai client cannot quote it (the runtime nests it).
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.message).toBe("400 status code (no body)");
    }
    const raw = await post({ messages: [user("a"), user("b")] });
    expect(raw.status).toBe(400);
    expect(await raw.json()).toMatchObject({
      object: "error",
      message: "Conversation roles must alternate user/assistant/user/assistant/...",
      type: "BadRequestError",
      param: null,
      code: 400,
    });
    expect(server.chatRequests).toHaveLength(1 + bad.length + 1);
  });

  it("no_system: any system message is refused, the rest must alternate", async () => {
    const { client } = await setup({ dialect: { roles: "no_system" }, respond: () => ({ content: "ok" }) });
    const err = await errorOf(client.chat.completions.create({ model: "m", messages: [system("s"), user("u")] as never }));
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(await (await post({ messages: [system("s"), user("u")] })).json()).toMatchObject({ message: "System role not supported" });
    expect(await (await post({ messages: [user("u"), assistant("a"), assistant("b")] })).json()).toMatchObject({
      message: "Conversation roles must alternate user/assistant/user/assistant/...",
    });
    const ok = await client.chat.completions.create({ model: "m", messages: [user("u"), assistant("a"), user("v")] as never });
    expect(ok.choices[0]?.message.content).toBe("ok");
  });
});

describe("tool calls", () => {
  const twoCalls = {
    tool_calls: [
      { id: "a", name: "calc", arguments: { x: 1 } },
      { id: "b", name: "calc", arguments: '{"x":2}' },
    ],
  };

  it("tool_ids missing: no id key, streamed or not", async () => {
    await setup({ dialect: { tool_ids: "missing" }, respond: () => twoCalls });
    const body = (await (await post(ask)).json()) as { choices: Array<{ message: { tool_calls: Msg[] } }> };
    expect(body.choices[0]?.message.tool_calls.map((c) => "id" in c)).toEqual([false, false]);
    const starts = deltas(await events(await post({ ...ask, stream: true })))
      .flatMap((d) => (d["tool_calls"] as Msg[] | undefined) ?? [])
      .filter((c) => "type" in c);
    expect(starts).toHaveLength(2);
    expect(starts.some((c) => "id" in c)).toBe(false);
  });

  it("tool_ids empty and duplicate reach the openai client", async () => {
    const { client } = await setup({ dialect: { tool_ids: "empty" }, respond: () => twoCalls });
    const ids = (await client.chat.completions.create(ask)).choices[0]?.message.tool_calls?.map((c) => c.id);
    expect(ids).toEqual(["", ""]);
    await server?.close();

    const dup = await setup({ dialect: { tool_ids: "duplicate" }, respond: () => twoCalls });
    expect((await dup.client.chat.completions.create(ask)).choices[0]?.message.tool_calls?.map((c) => c.id)).toEqual(["call_0", "call_0"]);
    const stream = await dup.client.chat.completions.create({ ...ask, stream: true });
    const streamedIds: unknown[] = [];
    for await (const chunk of stream) for (const d of chunk.choices[0]?.delta.tool_calls ?? []) if (d.id !== undefined) streamedIds.push(d.id);
    expect(streamedIds).toEqual(["call_0", "call_0"]);
  });

  it("object_arguments: an object when not streamed, string pieces when streamed", async () => {
    await setup({ dialect: { object_arguments: true }, chunk_size: 3, respond: () => twoCalls });
    const body = (await (await post(ask)).json()) as { choices: Array<{ message: { tool_calls: Array<{ function: Msg }> } }> };
    expect(body.choices[0]?.message.tool_calls.map((c) => c.function["arguments"])).toEqual([{ x: 1 }, { x: 2 }]);
    const pieces = deltas(await events(await post({ ...ask, stream: true })))
      .flatMap((d) => (d["tool_calls"] as Array<{ index: number; function?: Msg }> | undefined) ?? [])
      .filter((c) => c.index === 0)
      .map((c) => c.function?.["arguments"]);
    expect(pieces.every((p) => typeof p === "string")).toBe(true);
    expect(JSON.parse(pieces.join(""))).toEqual({ x: 1 });
  });

  it("tool_calls_in_content: Hermes blocks after the text, no tool_calls, finish stop", async () => {
    const { client } = await setup({ dialect: { tool_calls_in_content: true }, respond: () => ({ content: "Let me check.", ...twoCalls }) });
    const expected =
      'Let me check.\n<tool_call>\n{"name": "calc", "arguments": {"x":1}}\n</tool_call>\n<tool_call>\n{"name": "calc", "arguments": {"x":2}}\n</tool_call>';
    const res = await client.chat.completions.create(ask);
    expect(res.choices[0]?.message.content).toBe(expected);
    expect(res.choices[0]?.message.tool_calls).toBeUndefined();
    expect(res.choices[0]?.finish_reason).toBe("stop");

    const evs = await events(await post({ ...ask, stream: true }));
    const ds = deltas(evs);
    expect(joined(ds, "content")).toBe(expected);
    expect(ds.some((d) => "tool_calls" in d)).toBe(false);
    expect((evs as Chunk[]).flatMap((e) => (typeof e === "object" ? e.choices.map((c) => c.finish_reason) : [])).filter(Boolean)).toEqual(["stop"]);
  });
});

describe("usage", () => {
  it("missing: no usage, even when the stream asked for it", async () => {
    const { client } = await setup({ dialect: { usage: "missing" }, respond: () => ({ content: "hi" }) });
    expect((await client.chat.completions.create(ask)).usage).toBeUndefined();
    const stream = await client.chat.completions.create({ ...ask, stream: true, stream_options: { include_usage: true } });
    const usages: unknown[] = [];
    for await (const chunk of stream) if (chunk.usage) usages.push(chunk.usage);
    expect(usages).toEqual([]);
  });

  it("partial: only prompt_tokens", async () => {
    const { client } = await setup({ dialect: { usage: "partial" }, respond: () => ({ content: "hi", usage: { prompt_tokens: 7 } }) });
    expect((await client.chat.completions.create(ask)).usage).toEqual({ prompt_tokens: 7 });
    const evs = await events(await post({ ...ask, stream: true, stream_options: { include_usage: true } }));
    expect((evs as Chunk[]).filter((e) => typeof e === "object" && e.usage).map((e) => e.usage)).toEqual([{ prompt_tokens: 7 }]);
  });
});

describe("faults", () => {
  it("stall_after_chunks (streamed): N chunks then silence until the client aborts; the server lives on", async () => {
    const { client } = await setup({ replies: [{ content: "a long answer here", stall_after_chunks: 2 }, { content: "still here" }] });
    const controller = new AbortController();
    const started = Date.now();
    setTimeout(() => controller.abort(), 300);
    const seen: string[] = [];
    try {
      const stream = await client.chat.completions.create({ ...ask, stream: true }, { signal: controller.signal });
      for await (const chunk of stream) seen.push(chunk.choices[0]?.delta.content ?? "");
    } catch (err) {
      expect(err).toBeInstanceOf(OpenAI.APIUserAbortError);
    }
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(seen).toEqual(["", "a lo"]);
    expect((await client.chat.completions.create(ask)).choices[0]?.message.content).toBe("still here");
  });

  it("stall_after_chunks (not streamed): headers and half the body, then silence", async () => {
    await setup({ replies: [{ content: "a long answer here", stall_after_chunks: 0 }] });
    const controller = new AbortController();
    const res = await post(ask, { signal: controller.signal });
    expect(res.status).toBe(200);
    setTimeout(() => controller.abort(), 300);
    const started = Date.now();
    await expect(res.text()).rejects.toThrow();
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
  });

  it("drip_ms: streamed chunks and a non-streamed body arrive spread out", async () => {
    const { client } = await setup({
      chunk_size: 100,
      replies: [
        { content: "abc", drip_ms: 40 },
        { content: "dripped body", drip_ms: 15 },
      ],
    });
    const asked = Date.now();
    const stream = await client.chat.completions.create({ ...ask, stream: true });
    const times: number[] = [];
    for await (const _ of stream) times.push(Date.now());
    // role, "abc", finish: two gaps of 40 ms. Timed from the request, not from the first
    // chunk, which a busy client may read late, next to the second (66 ms between them once in CI).
    expect(times).toHaveLength(3);
    expect((times[2] ?? 0) - asked).toBeGreaterThanOrEqual(78);

    const started = Date.now();
    const res = await client.chat.completions.create(ask);
    expect(res.choices[0]?.message.content).toBe("dripped body");
    expect(Date.now() - started).toBeGreaterThanOrEqual(120); // ~10 pieces, 9 gaps of 15 ms
  });

  it("drip_ms stops writing when the client goes away", async () => {
    const { client } = await setup({ chunk_size: 1, replies: [{ content: "x".repeat(50), drip_ms: 20 }, { content: "after" }] });
    const controller = new AbortController();
    const stream = await client.chat.completions.create({ ...ask, stream: true }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 100);
    let count = 0;
    try {
      for await (const _ of stream) count++;
    } catch (err) {
      expect(err).toBeInstanceOf(OpenAI.APIUserAbortError);
    }
    expect(count).toBeLessThan(20);
    await new Promise((r) => setTimeout(r, 60));
    expect((await client.chat.completions.create(ask)).choices[0]?.message.content).toBe("after");
  });

  it("reset_mid_body: half the body then a dead socket, streamed or not", async () => {
    const { client } = await setup({ respond: () => ({ content: "this answer never completes", reset_mid_body: true }) });
    const res = await post(ask);
    expect(res.status).toBe(200);
    expect(Number(res.headers.get("content-length"))).toBeGreaterThan(0);
    await expect(res.text()).rejects.toThrow();
    await expect(client.chat.completions.create(ask)).rejects.toThrow();
    await expect(
      (async () => {
        for await (const _ of await client.chat.completions.create({ ...ask, stream: true }));
      })(),
    ).rejects.toThrow();
  });

  it("html: an nginx page whatever stream says, with the status asked", async () => {
    const { client } = await setup({ replies: [{ html: true }, { html: true }, { html: true, status: 502 }] });
    for (const stream of [false, true]) {
      const res = await post({ ...ask, stream });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toContain("text/html");
      expect(await res.text()).toBe("<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>");
    }
    const err = await errorOf(client.chat.completions.create(ask));
    expect(err.status).toBe(502);
  });

  it("empty_stream: chunks with no choices then [DONE]; not streamed, choices: []", async () => {
    const { client } = await setup({ respond: () => ({ empty_stream: true }) });
    const evs = await events(await post({ ...ask, stream: true }));
    expect(evs).toHaveLength(4);
    expect(evs.slice(0, 3).every((e) => (e as Chunk).choices.length === 0)).toBe(true);
    expect(evs[3]).toBe("[DONE]");
    let count = 0;
    for await (const chunk of await client.chat.completions.create({ ...ask, stream: true })) {
      expect(chunk.choices).toEqual([]);
      count++;
    }
    expect(count).toBe(3);
    const res = await client.chat.completions.create(ask);
    expect(res.object).toBe("chat.completion");
    expect(res.choices).toEqual([]);
  });
});

describe("strict", () => {
  const good = [system("s"), user("u"), assistant(null, [{ id: "a" }, { id: "b" }]), tool("a"), tool("b"), assistant("done"), user("again")];

  it("accepts a well-formed conversation", () => {
    expect(strictProblems({ messages: good })).toEqual([]);
    expect(roleSequence({ messages: good })).toEqual(["system", "user", "assistant", "tool", "tool", "assistant", "user"]);
  });

  const rawCall = (call: Msg): Msg => ({ role: "assistant", content: null, tool_calls: [call] });

  it.each<[string, Msg[], RegExp]>([
    [
      "a call without id",
      [user("u"), rawCall({ type: "function", function: { name: "f", arguments: "{}" } })],
      /tool_calls\[0\]\.id must be a non-empty string/,
    ],
    ["an empty id", [user("u"), assistant(null, [{ id: "" }])], /id must be a non-empty string/],
    ["duplicate ids", [user("u"), assistant(null, [{ id: "x" }]), tool("x"), assistant(null, [{ id: "x" }]), tool("x")], /'x' is not unique/],
    ["a wrong type", [user("u"), rawCall({ id: "a", type: "fn", function: { name: "f", arguments: "{}" } }), tool("a")], /type must be 'function'/],
    ["object arguments", [user("u"), rawCall({ id: "a", type: "function", function: { name: "f", arguments: {} } }), tool("a")], /arguments must be a string/],
    ["arguments that are not JSON", [user("u"), assistant(null, [{ id: "a", args: "{oops" }]), tool("a")], /not valid JSON/],
    ["an unanswered call", [user("u"), assistant(null, [{ id: "a" }, { id: "b" }]), tool("a"), user("next")], /'b' has no tool message/],
    ["a call left open at the end", [user("u"), assistant(null, [{ id: "a" }])], /'a' has no tool message/],
    ["an unknown tool_call_id", [user("u"), assistant(null, [{ id: "a" }]), tool("a"), tool("zzz")], /'zzz' matches no call/],
    ["a call answered twice", [user("u"), assistant(null, [{ id: "a" }]), tool("a"), tool("a")], /already answered/],
    ["a tool message after a user message", [user("u"), assistant(null, [{ id: "a" }]), tool("a"), user("v"), tool("a")], /does not follow an assistant/],
    ["reasoning_content sent back", [user("u"), { role: "assistant", content: "x", reasoning_content: "r" }, user("v")], /'reasoning_content' key/],
    ["reasoning sent back", [user("u"), { role: "assistant", content: "x", reasoning: "r" }, user("v")], /'reasoning' key/],
    ["think tags in the content", [user("u"), assistant("<think>hm</think>x"), user("v")], /contains <think>/],
    ["array content", [{ role: "user", content: [{ type: "text", text: "u" }] }], /messages\[0\]\.content must be a string/],
    ["null user content", [{ role: "user", content: null }], /must be a string/],
  ])("refuses %s", async (_name, messages, problem) => {
    expect(strictProblems({ messages } as ChatBody)[0]).toMatch(problem);
    const { client, server } = await setup({ strict: true, replies: [{ content: "first reply" }] });
    const err = await errorOf(client.chat.completions.create({ model: "m", messages: messages as never }));
    expect(err.status).toBe(400);
    expect(err.message).toMatch(problem);
    // refused requests consume no reply and are recorded
    expect((await client.chat.completions.create(ask)).choices[0]?.message.content).toBe("first reply");
    expect(strictProblems(server.chatRequests[0]?.body).length).toBeGreaterThan(0);
  });

  it("checks before the dialect's own rules and lets good requests through", async () => {
    const { client } = await setup({ strict: true, dialect: { roles: "alternate" }, respond: () => ({ content: "ok" }) });
    const err = await errorOf(client.chat.completions.create({ model: "m", messages: [user("a"), user("b"), assistant("<think>")] as never }));
    expect(err.message).toContain("contains <think>");
    const fine = [system("s"), user("u"), assistant(null, [{ id: "a" }]), tool("a"), assistant("done"), user("v")];
    const res = await client.chat.completions.create({ model: "m", messages: fine as never });
    expect(res.choices[0]?.message.content).toBe("ok");
  });
});
