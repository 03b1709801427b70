/**
 * The abort signal and deadline of one model call attempt, on either API
 * (docs/model-servers.md): aborts when the caller's
 * signal does, when the call's deadline passes, or when a stream is idle
 * too long; `expired` then says which, in words.
 */
export class CallControl {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private idleTimer: NodeJS.Timeout | undefined;
  private now = "connecting";
  expired: string | undefined;
  private readonly onAbort = () => this.controller.abort();

  constructor(
    private readonly parent: AbortSignal | undefined,
    deadline: number,
    within: string,
  ) {
    parent?.addEventListener("abort", this.onAbort, { once: true });
    const left = Math.max(0, deadline - Date.now());
    this.timer = setTimeout(() => this.expire(`no complete reply within ${within}, while ${this.now}`), left);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  phase(what: string): void {
    this.now = what;
  }

  idle(ms: number, why: () => string): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.expire(why()), ms);
  }

  private expire(why: string): void {
    if (this.controller.signal.aborted) return;
    this.expired = why;
    this.controller.abort();
  }

  release(): void {
    clearTimeout(this.timer);
    if (this.idleTimer) clearTimeout(this.idleTimer);
    // openai-node adds an abort listener to the signal it is given and never removes it;
    // a per-attempt signal keeps the caller's (a whole run's) clean.
    this.parent?.removeEventListener("abort", this.onAbort);
  }
}
