import type { ServerResponse } from "node:http";
import type { RunEvent } from "../events/types.js";
import { eventJson } from "../events/bus.js";
import { BASE_HEADERS } from "./http.js";

/** How often a comment line is sent so that idle proxies keep the stream open. */
const HEARTBEAT_MS = 15_000;

/**
 * Bytes that may wait in this process for one client (beyond what the
 * kernel's socket buffer took) before the client is dropped
 * (docs/server.md#slow-readers). It reconnects with Last-Event-ID.
 */
export const MAX_CLIENT_BUFFER = 256 * 1024;

/**
 * One Server-Sent Events response, the server's only one: run events
 * (`send`, `sendPaced`) or other JSON (`sendData`). For run events `id` is the event's
 * `seq` (so a reconnecting client's Last-Event-ID asks for newer events only),
 * `event` its type, `data` its JSON. Events come masked from the run's bus
 * (src/events/bus.ts) or from the trace store, which holds only masked events.
 */
export class EventStream {
  private readonly heartbeat: NodeJS.Timeout;
  private ended = false;
  /** The client fell more than `maxBuffer` bytes behind and was dropped. */
  dropped = false;

  constructor(
    private readonly res: ServerResponse,
    headers: Record<string, string> = {},
    private readonly maxBuffer = MAX_CLIENT_BUFFER,
    /** `run`: ids are `<task_id>:<seq>`, for a stream of several runs (a session's). @default seq alone */
    private readonly ids: "seq" | "run" = "seq",
  ) {
    res.writeHead(200, {
      ...BASE_HEADERS,
      ...headers,
      "content-type": "text/event-stream; charset=utf-8",
      connection: "keep-alive",
      // Reverse proxies (nginx) must not buffer a live stream.
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    this.heartbeat = setInterval(() => this.write(": keep-alive\n\n"), HEARTBEAT_MS);
    this.heartbeat.unref();
    res.once("close", () => this.stop());
  }

  /** False once the response ended or the client went away. */
  get open(): boolean {
    return !this.ended;
  }

  /** Call `fn` when the response closes, whether it ended or the client went away. */
  onClose(fn: () => void): void {
    this.res.once("close", fn);
  }

  send(event: RunEvent): void {
    this.write(this.frame(event));
  }

  private frame(event: RunEvent): string {
    return this.ids === "seq" ? frame(event) : `id: ${event.task_id}:${event.seq}\nevent: ${event.type}\ndata: ${eventJson(event)}\n\n`;
  }

  /**
   * Send events the client is catching up on (stored, or already past) at
   * the pace it reads: waits for the socket to drain whenever half the bound
   * is waiting, so a catch-up never gets a reader dropped. False when the
   * client went away meanwhile.
   */
  async sendPaced(event: RunEvent): Promise<boolean> {
    if (this.ended) return false;
    this.res.write(this.frame(event));
    if (this.res.writableLength > this.maxBuffer / 2) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.res.off("drain", done);
          this.res.off("close", done);
          resolve();
        };
        this.res.once("drain", done);
        this.res.once("close", done);
      });
    }
    return !this.ended;
  }

  /**
   * A frame of JSON other than a run's event (the OpenAI-compatible
   * endpoints' chunks, src/server/openai/): `data`, named `event` when given,
   * without an id; held to the same bound as every frame.
   */
  sendData(data: unknown, event?: string): void {
    this.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  }

  /** End the stream, after a last frame when given (Chat Completions' `data: [DONE]`). */
  end(last?: string): void {
    if (this.ended) return;
    this.stop();
    this.res.end(last);
  }

  private write(text: string): void {
    if (this.ended) return;
    this.res.write(text);
    // A reader that stopped reading: drop it rather than hold the rest of the run for it.
    if (this.res.writableLength > this.maxBuffer) {
      this.dropped = true;
      this.stop();
      this.res.destroy();
    }
  }

  private stop(): void {
    this.ended = true;
    clearInterval(this.heartbeat);
  }
}

/** An event's SSE frame, built once and shared by every client that follows the run. */
const frames = new WeakMap<RunEvent, string>();
function frame(event: RunEvent): string {
  let text = frames.get(event);
  if (text === undefined) {
    text = `id: ${event.seq}\nevent: ${event.type}\ndata: ${eventJson(event)}\n\n`;
    frames.set(event, text);
  }
  return text;
}

/** The `Last-Event-ID` of a stream of several runs (`<task_id>:<seq>`), if the client sent one. */
export function lastRunEventId(header: string | string[] | undefined): { task_id: string; seq: number } | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const match = value === undefined ? null : /^([^:\s]{1,200}):(\d{1,15})$/.exec(value);
  return match ? { task_id: match[1]!, seq: Number(match[2]) } : undefined;
}

/** The `Last-Event-ID` a reconnecting client sent: the last `seq` it has, 0 when none or not a number. */
export function lastEventId(header: string | string[] | undefined): number {
  const value = Array.isArray(header) ? header[0] : header;
  const n = Number(value);
  return value !== undefined && Number.isSafeInteger(n) && n > 0 ? n : 0;
}
