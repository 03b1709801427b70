/**
 * How a bench server runs as a child of its benchmark (bench/lib/chat-server.mjs,
 * bench/lib/solver-server.mjs; started by startServerChild in bench-team.mjs):
 * it listens on a free port of 127.0.0.1, prints the port on stdout, and
 * exits on SIGTERM or when the parent goes away (stdin closes).
 */
export function serveAsChild(server) {
  server.keepAliveTimeout = 30_000;
  // A slow model's replies wait longer than Node's request timeouts, which would answer 408 for the model
  // (checked every 30 s, they cut thousands of requests of a busy client): a bench's server never gives up.
  server.headersTimeout = 0;
  server.requestTimeout = 0;
  // Thousands of clients connecting at once wait in the accept queue, not in SYN retries (Node's default is 511).
  server.listen({ port: 0, host: "127.0.0.1", backlog: 4096 }, () => {
    process.stdout.write(`${server.address().port}\n`);
  });
  process.on("SIGTERM", () => process.exit(0));
  process.stdin.on("end", () => process.exit(0));
  process.stdin.resume();
}

/** A reply's content in the react protocol (docs/design/machines/react.md): what was observed and thought, and the action. */
export function reactContent(action_type, output, { observe = "", thought = "" } = {}) {
  return JSON.stringify({ observe, thought, action: { result: { action_type, output } } });
}

/** Answer a Chat Completions request with one choice (usage: 10 tokens each way unless given). */
export function sendCompletion(res, model, message, finish_reason, usage = { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 }) {
  res.setHeader("content-type", "application/json");
  res.end(
    JSON.stringify({
      id: "chatcmpl-bench",
      object: "chat.completion",
      created: 0,
      model,
      choices: [{ index: 0, message, finish_reason }],
      usage,
    }),
  );
}

/**
 * Answer a streamed Chat Completions request (`stream: true`) with the same
 * message as server-sent events, as a model streams it: the role, the
 * content in pieces, each tool call's name then its arguments, the finish
 * reason, the usage, `[DONE]`.
 */
export function sendStream(res, model, message, finish_reason) {
  const head = { id: "chatcmpl-bench", object: "chat.completion.chunk", created: 0, model };
  const event = (delta, finish = null) => `data: ${JSON.stringify({ ...head, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
  let out = event({ role: "assistant", content: "" });
  const content = message.content ?? "";
  const piece = Math.max(1, Math.ceil(content.length / 8));
  for (let i = 0; i < content.length; i += piece) out += event({ content: content.slice(i, i + piece) });
  for (const [index, call] of (message.tool_calls ?? []).entries()) {
    out += event({ tool_calls: [{ index, id: call.id, type: "function", function: { name: call.function.name, arguments: "" } }] });
    out += event({ tool_calls: [{ index, function: { arguments: call.function.arguments } }] });
  }
  out += event({}, finish_reason);
  out += `data: ${JSON.stringify({ ...head, choices: [], usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 } })}\n\n`;
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.end(`${out}data: [DONE]\n\n`);
}
