/**
 * Start-up beside the database (docs/scale-out.md#when-the-database-goes-away):
 * `runtime worker` and `runtime serve --store postgres://...` started while
 * PostgreSQL is down or still starting (a fleet and its database brought up
 * together) wait for it, one line per try, instead of exiting. An error that
 * waiting would not mend (a refused login, an unknown database, a bad URL, a
 * schema newer than the code) stands at once. Loaded only by those commands:
 * it brings `pg` with it.
 */
import { causes, describeError } from "../errors.js";
import { backoff } from "../store/committer.js";
import { safeUrl, transient } from "../store/postgres/connect.js";

export interface UntilReachableOptions<T> {
  /** The store's URL, named (without its password) in the line said per failed try. */
  url: string;
  /** Everything that needs the database, opened together; closes what it opened when it fails. */
  open: () => Promise<T>;
  /** Closes what `open` gave, when it came after a stop. */
  close: (opened: T) => Promise<void>;
  /** Settles when the process is asked to stop (SIGTERM, SIGINT): the wait ends there. */
  stopped: Promise<void>;
  /** Says one line (the caller adds its command's name). */
  say: (line: string) => void;
}

/** The pause before try `attempt + 1`: 0.8 s doubling, 10 s at most (the store's backoff, doubled), give or take a quarter so a fleet does not knock in step. */
function startBackoff(attempt: number): number {
  return 2 * backoff(attempt + 2) * (0.75 + Math.random() / 2);
}

/**
 * `open()`, tried again after a growing pause for as long as it fails with
 * the database away (`transient`); any other failure is thrown. Resolves to
 * undefined when `stopped` settles first; what an `open()` in flight then
 * opens is closed once it has, so no pool or timer keeps the process alive.
 */
export async function untilReachable<T>(options: UntilReachableOptions<T>): Promise<T | undefined> {
  const { url, open, close, stopped, say } = options;
  const stop = stopped.then(() => "stopped" as const);
  for (let attempt = 0; ; attempt++) {
    const opening = open();
    const outcome = await Promise.race([
      opening.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      stop,
    ]);
    if (outcome === "stopped") {
      opening.then(close, () => {}).catch(() => {});
      return undefined;
    }
    if ("value" in outcome) return outcome.value;
    if (!transient(outcome.error)) throw outcome.error;
    const pause = startBackoff(attempt);
    say(`PostgreSQL at ${safeUrl(url)} is not reachable (${reasonOf(outcome.error, url)}); trying again in ${(pause / 1000).toFixed(1)} s`);
    let timer: NodeJS.Timeout | undefined;
    const woke = await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, pause))), stop]);
    clearTimeout(timer);
    if (woke === "stopped") return undefined;
  }
}

/** What the database or the socket said, from the innermost cause (the outer ones repeat the URL). */
function reasonOf(err: unknown, url: string): string {
  const inner = causes(err).at(-1) ?? err;
  // Node's AggregateError of a refused connection to every address of a name has no message, only a code.
  const said = describeError(inner) || String((inner as { code?: unknown }).code ?? "no answer");
  return said.split(url).join(safeUrl(url));
}
