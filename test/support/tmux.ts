/**
 * A real terminal for tests: a detached tmux session on a private server
 * (its own socket, so nothing of a person's tmux is touched), read with
 * `capture-pane`. Fails naming what is missing when tmux is not installed
 * (test/support/components.ts).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { COMPONENTS, requireComponent } from "./components.js";

const TMUX = COMPONENTS.tmux.path;
let sessions = 0;

export class TmuxTerminal {
  private readonly socket: string;
  /** Where the command's exit status is written when it ends. */
  private readonly statusFile: string;

  private constructor(socket: string) {
    this.socket = socket;
    this.statusFile = join(mkdtempSync(join(tmpdir(), "tmux-status-")), "status");
  }

  /** Run `command` (through sh) in a new window of `width` x `height`. */
  static start(command: string, size: { width: number; height: number }, env: Record<string, string> = {}): TmuxTerminal {
    requireComponent("tmux");
    const term = new TmuxTerminal(`runtime-test-${process.pid}-${++sessions}`);
    const vars = Object.entries(env).flatMap(([k, v]) => ["-e", `${k}=${v}`]);
    // A window that keeps its size whatever clients attach, and keeps its pane when the command ends.
    // The status through a file: tmux may leave the ended command a zombie for a while, its status
    // unknown. The shell's own Ctrl-C waits for the command (a trap, not the default that would end it).
    const wrapped = `trap true INT; ${command}; echo $? > '${term.statusFile}'`;
    term.tmux(
      "-f",
      "/dev/null",
      "new-session",
      "-d",
      ...vars,
      "-x",
      String(size.width),
      "-y",
      String(size.height),
      wrapped,
      ";",
      "set-option",
      "-g",
      "remain-on-exit",
      "on",
      ";",
      "set-option",
      "-g",
      "window-size",
      "manual",
    );
    return term;
  }

  /** The screen's rows; `joined`: a row the terminal wrapped comes back as one line, as long as it was written. */
  capture(options: { joined?: boolean } = {}): string[] {
    const text = this.tmux("capture-pane", "-p", ...(options.joined ? ["-J"] : []));
    return text.replace(/\n$/, "").split("\n");
  }

  /** The screen and the scrollback above it. */
  history(): string[] {
    // Without the note tmux writes under a dead pane (remain-on-exit).
    return this.tmux("capture-pane", "-p", "-J", "-S", "-")
      .replace(/\n$/, "")
      .split("\n")
      .filter((l) => !l.startsWith("Pane is dead"));
  }

  /** Type `keys` (tmux key names: `Enter`, `C-c`) as a person would. */
  sendKeys(...keys: string[]): void {
    this.tmux("send-keys", ...keys);
  }

  /** Poll the screen until `ready` holds; fail with the screen after `timeoutMs`. */
  async waitFor(ready: (screen: string[]) => boolean, timeoutMs = 20_000): Promise<string[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const screen = this.capture({ joined: true });
      if (ready(screen)) return screen;
      if (Date.now() > deadline) throw new Error(`the screen never got ready:\n${screen.join("\n")}`);
      await new Promise((r) => setTimeout(r, 40));
    }
  }

  resize(width: number, height: number): void {
    this.tmux("resize-window", "-x", String(width), "-y", String(height));
  }

  /** Whether the command has ended (the pane stays for capture). */
  exited(): boolean {
    return existsSync(this.statusFile) && readFileSync(this.statusFile, "utf8").endsWith("\n");
  }

  /** The command's exit status (128 + the signal's number when a signal ended it, as the shell says). */
  exitStatus(): number {
    if (!this.exited()) throw new Error("the command has not ended");
    return Number(readFileSync(this.statusFile, "utf8").trim());
  }

  kill(): void {
    try {
      this.tmux("kill-server");
    } catch {
      // Already gone.
    }
  }

  private tmux(...args: string[]): string {
    return execFileSync(TMUX, ["-L", this.socket, ...args], { encoding: "utf8" });
  }
}
