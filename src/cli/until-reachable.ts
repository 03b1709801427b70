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
import { retry, retryPolicies } from "../retry.js";
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

/**
 * `open()`, tried again after a growing pause (`retryPolicies.startWait`)
 * for as long as it fails with the database away (`transient`); any other
 * failure is thrown. Resolves to undefined when `stopped` settles first;
 * what an `open()` in flight then opens is closed once it has, so no pool
 * or timer keeps the process alive.
 */
export async function untilReachable<T>(options: UntilReachableOptions<T>): Promise<T | undefined> {
  const { url, open, close, stopped, say } = options;
  const stop = new AbortController();
  void stopped.then(() => stop.abort());
  // One try, given up when the process is asked to stop: what it opens later is closed then.
  const opened = (): Promise<T> => {
    const opening = open();
    return new Promise<T>((resolve, reject) => {
      const onStop = () => {
        opening.then(close, () => {}).catch(() => {});
        reject(stop.signal.reason);
      };
      stop.signal.addEventListener("abort", onStop, { once: true });
      const settled = () => stop.signal.removeEventListener("abort", onStop);
      opening.then(
        (value) => {
          settled();
          resolve(value);
        },
        (error: unknown) => {
          settled();
          reject(error);
        },
      );
    });
  };
  try {
    return await retry(opened, {
      policy: retryPolicies.startWait,
      isRetryable: transient,
      signal: stop.signal,
      onRetry: ({ error, pauseMs }) =>
        say(`PostgreSQL at ${safeUrl(url)} is not reachable (${reasonOf(error, url)}); trying again in ${(pauseMs / 1000).toFixed(1)} s`),
    });
  } catch (err) {
    if (stop.signal.aborted) return undefined;
    throw err;
  }
}

/** What the database or the socket said, from the innermost cause (the outer ones repeat the URL). */
function reasonOf(err: unknown, url: string): string {
  const inner = causes(err).at(-1) ?? err;
  // Node's AggregateError of a refused connection to every address of a name has no message, only a code.
  const said = describeError(inner) || String((inner as { code?: unknown }).code ?? "no answer");
  return said.split(url).join(safeUrl(url));
}
