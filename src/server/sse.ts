import type { ServerResponse } from "node:http";
import type { RunEvent } from "../events/types.js";
import { eventJson } from "../events/bus.js";
import { BASE_HEADERS } from "./http.js";

/** How often a comment line is sent so that idle proxies keep the stream open. */
const HEARTBEAT_MS = 15_000;

/**
 * One Server-Sent Events response carrying RunEvents: `id` is the event's
 * `seq` (so a reconnecting client's Last-Event-ID asks for newer events only),
 * `event` its type, `data` its JSON. Events come masked from the run's bus
 * (src/events/bus.ts) or from the trace store, which holds only masked events.
 */
export class EventStream {
  private readonly heartbeat: NodeJS.Timeout;
  private ended = false;

  constructor(
    private readonly res: ServerResponse,
    headers: Record<string, string> = {},
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
    this.write(`id: ${event.seq}\nevent: ${event.type}\ndata: ${eventJson(event)}\n\n`);
  }

  end(): void {
    if (this.ended) return;
    this.stop();
    this.res.end();
  }

  private write(text: string): void {
    if (!this.ended) this.res.write(text);
  }

  private stop(): void {
    this.ended = true;
    clearInterval(this.heartbeat);
  }
}

/** The `Last-Event-ID` a reconnecting client sent: the last `seq` it has, 0 when none or not a number. */
export function lastEventId(header: string | string[] | undefined): number {
  const value = Array.isArray(header) ? header[0] : header;
  const n = Number(value);
  return value !== undefined && Number.isSafeInteger(n) && n > 0 ? n : 0;
}
