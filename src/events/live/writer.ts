/**
 * Draws frames in place at the bottom of a terminal: each frame replaces the
 * one before (the rows it took erased, then written over), at most
 * one frame per `intervalMs` however fast events come, and the latest frame
 * is never dropped: a request inside the interval is drawn when it ends.
 * Escape sequences come from `ansi-escapes`; widths from `string-width`
 * (wide and combining characters, colours), so a frame is erased by the rows
 * it really took, also after the terminal was resized and rewrapped it.
 */
import ansiEscapes from "ansi-escapes";
import stringWidth from "string-width";

/** A terminal stream: `process.stderr` when it is a TTY. */
export interface TtyOut {
  write(chunk: string): unknown;
  columns?: number;
  rows?: number;
  /** The size asked of the terminal now (`tty.WriteStream`), fresher than `columns` and `rows`, which wait for SIGWINCH. */
  getWindowSize?(): [number, number];
}

export interface FrameSize {
  width: number;
  height: number;
}

export interface FrameWriterOptions {
  /** Shortest time between two frames. @default 66 (15 frames a second) */
  intervalMs?: number;
  /** @default Date.now */
  now?: () => number;
}

/** Size of a terminal that reports none (a pty without a size). */
const FALLBACK = { columns: 80, rows: 24 };

export class FrameWriter {
  private shown: string[] = [];
  private lastDraw = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private dirty = false;
  private suspended = false;
  private closed = false;
  private readonly intervalMs: number;
  private readonly now: () => number;
  /** Frames written, for tests and the curious. */
  frames = 0;

  constructor(
    private readonly out: TtyOut,
    private readonly frame: (size: FrameSize) => string[],
    options: FrameWriterOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 66;
    this.now = options.now ?? Date.now;
  }

  /**
   * The frame's room: one column less than the terminal (a line that fills
   * the last column makes some terminals wrap at once) and one row less (the
   * cursor's line below the frame, so the frame never scrolls itself away).
   */
  size(): FrameSize {
    const { columns, rows } = this.terminalSize();
    return { width: Math.max(1, columns - 1), height: Math.max(0, rows - 1) };
  }

  /**
   * Asked of the terminal at each frame: a terminal resized (and rewrapped)
   * a moment before its SIGWINCH reached us is already measured right.
   */
  private terminalSize(): { columns: number; rows: number } {
    let size: [number, number] | undefined;
    try {
      size = this.out.getWindowSize?.();
    } catch {
      // Not a terminal any more (closed): the last size known.
    }
    return { columns: size?.[0] || this.out.columns || FALLBACK.columns, rows: size?.[1] || this.out.rows || FALLBACK.rows };
  }

  /** Something changed: draw now, or when the interval since the last frame is over. */
  request(): void {
    if (this.closed || this.suspended) return;
    this.dirty = true;
    const wait = this.lastDraw + this.intervalMs - this.now();
    if (wait <= 0) this.draw();
    else
      this.timer ??= setTimeout(() => {
        this.timer = undefined;
        if (this.dirty && !this.closed && !this.suspended) this.draw();
      }, wait);
  }

  /** Take the frame off the screen and draw nothing until `resume()` (someone else writes: a question to a person). */
  suspend(): void {
    if (this.closed || this.suspended) return;
    this.suspended = true;
    this.out.write(this.erase() + ansiEscapes.cursorShow);
  }

  resume(): void {
    if (this.closed || !this.suspended) return;
    this.suspended = false;
    this.request();
  }

  /** Draw the last frame if one is pending, then replace it with `lines`, left in the scrollback. */
  finish(lines: string[]): void {
    if (this.closed) return;
    if (this.dirty && !this.suspended) this.draw();
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.out.write(this.erase() + lines.map((l) => `${l}\n`).join("") + ansiEscapes.cursorShow);
  }

  private draw(): void {
    this.dirty = false;
    this.lastDraw = this.now();
    const lines = this.frame(this.size());
    this.out.write(this.erase() + ansiEscapes.cursorHide + lines.map((l) => `${l}\n`).join(""));
    this.shown = lines;
    this.frames += 1;
  }

  /**
   * Erase the rows the frame on screen takes at the terminal's width now,
   * line by line from the cursor's (empty) line up, ending at the frame's
   * first row. Not "erase down" from there: some terminals (tmux's
   * scroll-on-clear) push a screen cleared from its top into the scrollback,
   * which would fill it with old frames.
   */
  private erase(): string {
    const { columns } = this.terminalSize();
    const rows = this.shown.reduce((n, line) => n + Math.max(1, Math.ceil(stringWidth(line) / columns)), 0);
    this.shown = [];
    return rows > 0 ? ansiEscapes.eraseLines(rows + 1) : "";
  }
}
