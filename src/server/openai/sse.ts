/**
 * OpenAI's Server-Sent Events: `data: JSON` frames (and the Responses API's
 * `event:` names), a comment now and then so that idle proxies keep the
 * stream open while a long run works.
 */
import type { ServerResponse } from "node:http";
import { BASE_HEADERS } from "../http.js";

const HEARTBEAT_MS = 15_000;

export class OpenAIStream {
  private readonly heartbeat: NodeJS.Timeout;

  constructor(
    private readonly res: ServerResponse,
    headers: Record<string, string>,
  ) {
    res.writeHead(200, {
      ...BASE_HEADERS,
      ...headers,
      "content-type": "text/event-stream; charset=utf-8",
      connection: "keep-alive",
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    this.heartbeat = setInterval(() => res.write(": keep-alive\n\n"), HEARTBEAT_MS);
    this.heartbeat.unref();
    res.once("close", () => clearInterval(this.heartbeat));
  }

  /** One frame: `data` as JSON, named `event` when given. */
  send(data: unknown, event?: string): void {
    if (this.res.writableEnded) return;
    this.res.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  }

  /** End the stream, after `data: [DONE]` when asked (Chat Completions sends it, the Responses API does not). */
  end(done: boolean): void {
    clearInterval(this.heartbeat);
    if (this.res.writableEnded) return;
    this.res.end(done ? "data: [DONE]\n\n" : undefined);
  }
}
