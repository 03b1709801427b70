#!/usr/bin/env node
/**
 * A tiny OpenAI-compatible Chat Completions server for the benchmarks.
 *
 * The user message says how long the conversation is (`steps=N`): the server
 * replies with a `calculator` tool call while the request holds fewer than
 * N-1 assistant messages and answers on the N-th call. The number of assistant
 * messages is the number of earlier model calls in both layouts: the react
 * agent's (one assistant per finished recursion) and a plain chat transcript
 * (assistant with tool_calls, then tool messages). The answer quotes the last
 * `"result":NUMBER` seen in the request, so a caller can check that the tools
 * really ran.
 *
 * With `tool=NAME` in the user message, the calls are of that tool instead,
 * with the arguments `{"tag": "<tag>-<k>"}` (bench/many-workers.mjs counts
 * each call's side effect by its tag).
 *
 * A request with `stream: true` is answered as server-sent events.
 *
 * Each reply waits BENCH_DELAY_MS, or `delay=MS` when the user message holds
 * it (a bench's warm-up runs need no latency). With `stamp=1` in the user
 * message the answer ends with ` sent=<epoch ms>`, the moment the server
 * sent it, so that a client can time the answer's way through the runtime.
 * `GET /load` gives the replies waiting now and the most that waited at once
 * (`?reset=1` starts that count again): it holds 10,000 requests waiting on
 * one process (bench/serve-waiting.mjs).
 *
 * Requests whose user message holds `tag=NAME` are recorded (body bytes,
 * message counts); `GET /stats?tag=NAME` returns them.
 *
 * Run it as its own process so that its CPU is not counted as the client's:
 *   node bench/lib/chat-server.mjs   → prints the port on stdout
 */
import { createServer } from "node:http";
import { reactContent, sendCompletion, sendStream, serveAsChild } from "./serve-child.mjs";

const recorded = new Map();

function reply(body, res) {
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const user = messages.find((m) => m.role === "user")?.content ?? "";
  const steps = Number(/steps=(\d+)/.exec(user)?.[1] ?? 1);
  const calls = messages.filter((m) => m.role === "assistant").length;
  const message = { role: "assistant", content: null };
  let finish = "stop";
  if (calls < steps - 1) {
    const k = calls + 1;
    const tool = /tool=(\w+)/.exec(user)?.[1];
    const call = tool
      ? { name: tool, arguments: JSON.stringify({ tag: `${/tag=(\S+)/.exec(user)?.[1]}-${k}` }) }
      : { name: "calculator", arguments: JSON.stringify({ expression: `round(pi * ${k}^2, 2)` }) };
    message.content = reactContent("CALL_TOOL", {}, { observe: `step ${k}`, thought: "compute the next figure" });
    message.tool_calls = [{ id: `call_${k}_${Math.random().toString(36).slice(2, 10)}`, type: "function", function: call }];
    finish = "tool_calls";
  } else {
    const last = messages[messages.length - 1];
    const text = typeof last?.content === "string" ? last.content : "";
    const result = /"result":\s*(-?[\d.eE+-]+)/.exec(text)?.[1] ?? "none";
    const stamp = /stamp=1/.test(user) ? ` sent=${Date.now()}` : "";
    message.content = reactContent("ANSWER", { answer: `last=${result}${stamp}` }, { observe: "all figures computed", thought: "answer" });
  }
  (body.stream ? sendStream : sendCompletion)(res, body.model ?? "bench-model", message, finish);
}

function record(user, bytes, messages) {
  const tag = /tag=(\S+)/.exec(user)?.[1];
  if (!tag) return;
  let list = recorded.get(tag);
  if (!list) recorded.set(tag, (list = []));
  list.push({
    bytes,
    messages: messages.length,
    system: messages.filter((m) => m.role === "system").length,
    assistant: messages.filter((m) => m.role === "assistant").length,
    first_role: messages[0]?.role,
  });
}

/** Replies waiting now, and the most at once since the last reset. */
const load = { waiting: 0, peak: 0 };

const server = createServer((req, res) => {
  if (req.method === "GET" && req.url?.startsWith("/load")) {
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(load));
    if (req.url.includes("reset=1")) load.peak = load.waiting;
    return;
  }
  if (req.method === "GET" && req.url?.startsWith("/stats")) {
    const tag = new URL(req.url, "http://x").searchParams.get("tag") ?? "";
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(recorded.get(tag) ?? []));
    return;
  }
  // A client that went away (a cancelled run) must not take the server with it.
  req.on("error", () => {});
  res.on("error", () => {});
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const raw = Buffer.concat(chunks);
    let body;
    try {
      body = JSON.parse(raw.toString("utf8") || "{}");
    } catch {
      res.statusCode = 400;
      res.end(JSON.stringify({ error: { message: "bad json" } }));
      return;
    }
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const user = messages.find((m) => m.role === "user")?.content ?? "";
    record(user, raw.length, messages);
    const delay = Number(/delay=(\d+)/.exec(user)?.[1] ?? process.env.BENCH_DELAY_MS ?? 0);
    if (delay <= 0) return reply(body, res);
    load.peak = Math.max(load.peak, ++load.waiting);
    setTimeout(() => {
      load.waiting--;
      reply(body, res);
    }, delay);
  });
});
serveAsChild(server);
