import type { ServerResponse } from "node:http";
import type { RunEvent } from "../events/types.js";
import { eventJson } from "../events/bus.js";
import { BASE_HEADERS } from "./http.js";

/** How often a comment line is sent so that idle proxies keep the stream open. */
const HEARTBEAT_MS = 15_000;

/**
 * How long a client may read nothing while a frame waits for it before it is
 * dropped (docs/server.md#slow-readers). @default 60 s
 */
export const STALL_LIMIT_MS = 60_000;

/** The responses dropped for reading nothing for the stall limit: their runs go on (a client that leaves by itself cancels the run it started). */
const dropped = new WeakSet<ServerResponse>();

let droppedTotal = 0;

/** How many clients this process dropped for reading nothing for the stall limit (`/metrics`: runtime_sse_clients_dropped_total). */
export function clientsDropped(): number {
  return droppedTotal;
}

/** Whether the server dropped this response's client for reading nothing for the stall limit. */
export function wasDropped(res: ServerResponse): boolean {
  return dropped.has(res);
}

/** What an SSE response is opened with. */
export interface EventStreamOptions {
  /** Headers beside the stream's own (`x-task-id`, ...). */
  headers?: Record<string, string>;
  /** How long the client may read nothing before it is dropped. @default STALL_LIMIT_MS */
  stallLimitMs?: number;
  /** `run`: ids are `<task_id>:<seq>`, for a stream of several runs (a session's). @default seq alone */
  ids?: "seq" | "run";
}

/**
 * One Server-Sent Events response, the server's only writer of them, for
 * every protocol: run events (`send`) or other JSON (`sendData`, the
 * OpenAI-compatible chunks and A2A's JSON-RPC answers). Every frame waits
 * until the client has taken the one before (the socket drained), so what
 * waits here for a client is at most one frame, and the caller reads on from
 * the store at the client's pace (docs/server.md#slow-readers). A client that
 * takes nothing for the stall limit is dropped. For run events `id` is the
 * event's `seq` (a reconnecting client's Last-Event-ID asks for newer events
 * only), `event` its type, `data` its JSON (masked: events come from the
 * store, which holds only masked events).
 */
export class EventStream {
  private readonly heartbeat: NodeJS.Timeout;
  private readonly stallLimitMs: number;
  private readonly ids: "seq" | "run";
  private ended = false;
  private corked = false;
  private midFrame = false;

  constructor(
    private readonly res: ServerResponse,
    options: EventStreamOptions = {},
  ) {
    this.stallLimitMs = options.stallLimitMs ?? STALL_LIMIT_MS;
    this.ids = options.ids ?? "seq";
    res.writeHead(200, {
      ...BASE_HEADERS,
      ...options.headers,
      "content-type": "text/event-stream; charset=utf-8",
      connection: "keep-alive",
      // Reverse proxies (nginx) must not buffer a live stream.
      "x-accel-buffering": "no",
    });
    res.flushHeaders();
    // A frame still waiting is as good as a heartbeat.
    this.heartbeat = setInterval(() => {
      if (!this.ended && !this.midFrame && res.writableLength === 0) res.write(": keep-alive\n\n");
    }, HEARTBEAT_MS);
    this.heartbeat.unref();
    res.once("close", () => this.stop());
  }

  /** False once the response ended or the client went away. */
  get open(): boolean {
    return !this.ended;
  }

  /** Whether the client was dropped for reading nothing for the stall limit. */
  get dropped(): boolean {
    return dropped.has(this.res);
  }

  /** Call `fn` when the response closes, whether it ended or the client went away. */
  onClose(fn: () => void): void {
    this.res.once("close", fn);
  }

  /** Send a run's event once the client has taken the frame before; false when the client is gone. */
  send(event: RunEvent): Promise<boolean> {
    return this.write(this.ids === "seq" ? frame(event) : `id: ${event.task_id}:${event.seq}\nevent: ${event.type}\ndata: ${eventJson(event)}\n\n`);
  }

  /** A frame of other JSON: `data`, named `event` when given, without an id; paced as every frame. */
  sendData(data: unknown, event?: string): Promise<boolean> {
    return this.write(`${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`);
  }

  /** End the stream, after a last frame when given (Chat Completions' `data: [DONE]`). */
  end(last?: string): void {
    if (this.ended) return;
    this.stop();
    this.res.end(last);
  }

  /**
   * Write a frame; when the socket holds it back, wait until the client takes
   * it (true) or goes away or stalls (false). A frame longer than a piece is
   * written a piece at a time, each once the client has taken the one before:
   * what a client's socket holds of a frame (its own copy of the bytes) is
   * at most about a piece, however long the event (a run.finished with a
   * long answer).
   */
  private async write(text: string): Promise<boolean> {
    if (this.ended) return false;
    if (!this.corked) {
      // The frames written in one turn of the event loop (a read of the store) leave in one system call.
      this.corked = true;
      this.res.cork();
      process.nextTick(() => {
        this.corked = false;
        this.res.uncork();
      });
    }
    for (let at = 0; at < text.length; ) {
      const end = pieceEnd(text, at);
      // No heartbeat between the pieces of a frame: the comment would land inside it.
      this.midFrame = end < text.length;
      const taken = this.res.write(at === 0 && end === text.length ? text : text.slice(at, end));
      at = end;
      if (!taken) await this.drained();
      if (this.ended) return false;
    }
    this.midFrame = false;
    return true;
  }

  /** Until the response drains or closes; a client that takes no byte for the stall limit is dropped meanwhile. */
  private drained(): Promise<void> {
    const res = this.res;
    return new Promise<void>((resolve) => {
      let waiting = res.writableLength;
      let since = Date.now();
      // The client is taking bytes while what waits shrinks; stalled once it has not for the limit.
      const watch = setInterval(
        () => {
          if (res.writableLength < waiting) since = Date.now();
          waiting = res.writableLength;
          if (Date.now() - since < this.stallLimitMs) return;
          dropped.add(res);
          droppedTotal++;
          res.destroy();
        },
        Math.max(10, Math.min(1000, this.stallLimitMs / 4)),
      );
      const done = () => {
        clearInterval(watch);
        res.off("drain", done);
        res.off("close", done);
        resolve();
      };
      res.on("drain", done);
      res.on("close", done);
    });
  }

  private stop(): void {
    this.ended = true;
    clearInterval(this.heartbeat);
  }
}

/** The most characters of a frame written at once (docs/server.md#slow-readers). */
const PIECE = 64 * 1024;

/** Where the piece of `text` from `at` ends: PIECE characters on, never between the halves of a surrogate pair. */
function pieceEnd(text: string, at: number): number {
  let end = Math.min(text.length, at + PIECE);
  const code = text.charCodeAt(end - 1);
  if (end < text.length && code >= 0xd800 && code <= 0xdbff) end--;
  return end;
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
