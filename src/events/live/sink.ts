/**
 * The live view as a sink of the run's events: the projection (state.ts,
 * ../projection.ts) folds each event, the writer (writer.ts) redraws the frame the renderer
 * (render.ts) makes, throttled, on every change, on a clock tick (the running
 * timers) and on a resize; `close()` leaves a short summary in its place.
 */
import ansiEscapes from "ansi-escapes";
import type { EventSink } from "../bus.js";
import { renderSummary, renderView } from "./render.js";
import { LiveState, type ViewConfig } from "./state.js";
import { FrameWriter, type TtyOut } from "./writer.js";

/** A terminal that tells when it is resized (`process.stderr` as a TTY). */
export interface LiveOut extends TtyOut {
  on?(event: "resize", listener: () => void): unknown;
  off?(event: "resize", listener: () => void): unknown;
}

export interface LiveSinkOptions extends ViewConfig {
  /** ANSI colours. */
  color: boolean;
  /** Shortest time between two frames. @default 66 */
  intervalMs?: number;
  /** How often the running timers are redrawn without events. @default 250 */
  tickMs?: number;
  /** @default Date.now */
  now?: () => number;
}

export type LiveSink = EventSink & {
  /** More of the answer as it is written (src/cli/answer-feed.ts), shown under the agents until the run ends. */
  answer(text: string): void;
  /** Replace the frame with the summary; `interrupted`: the run was stopped (Ctrl-C), whatever its events say. */
  close(how?: { interrupted?: boolean }): void;
  /** The state drawn, for tests. */
  readonly view: LiveState;
};

export function liveSink(out: LiveOut, options: LiveSinkOptions): LiveSink {
  const now = options.now ?? Date.now;
  const config: ViewConfig = {
    ...(options.budget ? { budget: options.budget } : {}),
    ...(options.priceOf ? { priceOf: options.priceOf } : {}),
  };
  const view = new LiveState(config);
  const writer = new FrameWriter(out, ({ width, height }) => renderView(view, { width, height, now: now(), color: options.color }), {
    ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}),
    now,
  });
  const onResize = () => writer.request();
  out.on?.("resize", onResize);
  // The timers run on between events; the tick never keeps the process alive.
  const tick = setInterval(() => writer.request(), options.tickMs ?? 250);
  tick.unref();
  // A process that exits in the middle (a second Ctrl-C) gets its cursor back.
  const restoreCursor = () => out.write(ansiEscapes.cursorShow);
  process.once("exit", restoreCursor);
  let closed = false;

  const sink = ((event) => {
    if (closed) return;
    view.apply(event);
    // A person is asked on this terminal (src/cli/run-report.ts), one call after another: the frame
    // steps aside until every call asked about is decided, and the questions stay in the scrollback.
    if (view.run.pending_approvals.length > 0) writer.suspend();
    else writer.resume();
    writer.request();
  }) as LiveSink;
  sink.answer = (text) => {
    if (closed) return;
    view.answer += text;
    writer.request();
  };
  sink.close = (how = {}) => {
    if (closed) return;
    closed = true;
    clearInterval(tick);
    out.off?.("resize", onResize);
    process.off("exit", restoreCursor);
    writer.finish(renderSummary(view, { width: writer.size().width, now: now(), color: options.color, ...(how.interrupted ? { interrupted: true } : {}) }));
  };
  Object.defineProperty(sink, "view", { get: () => view });
  return sink;
}
