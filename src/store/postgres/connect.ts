/**
 * Connections to PostgreSQL (docs/scale-out.md#postgresql): one pool per
 * store URL, with timeouts on connecting, on every statement and on idle
 * transactions, so a dead or stalling database becomes an error, never a
 * hang. A URL's password never reaches a message: `safeUrl` drops it.
 * A connection the database drops (a restart, a failover) is an error of
 * the statement using it, never of the process; `transient` tells such an
 * error from the others, for those who wait for the database to be back
 * (docs/scale-out.md#when-the-database-goes-away).
 */
import pg from "pg";
import { RuntimeError, causes, describeError } from "../../errors.js";
import { retry, retryPolicies } from "../../retry.js";

/** The schema that holds the runtime's tables (the queue has its own, `runtime_queue`). */
export const SCHEMA = "runtime";

export interface PoolOptions {
  /** Connections this process may hold. @default 10 */
  max?: number;
  /** @default 10000 */
  connectTimeoutMs?: number;
  /** Longest any one statement may run. @default 30000 */
  statementTimeoutMs?: number;
}

/** The URL without its password (and without any query string, which may carry one). */
export function safeUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    parsed.search = "";
    return parsed.toString();
  } catch {
    return "postgres://(unparseable URL)";
  }
}

export function createPool(url: string, options: PoolOptions = {}): pg.Pool {
  let config: pg.PoolConfig;
  try {
    new URL(url);
    config = { connectionString: url };
  } catch {
    throw new RuntimeError("USAGE", `not a PostgreSQL URL: ${safeUrl(url)} (expected postgres://user:password@host:port/database)`);
  }
  const pool = new pg.Pool({
    ...config,
    max: options.max ?? 10,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    idle_in_transaction_session_timeout: 60_000,
    application_name: "runtime",
    // Detect a peer that went away without closing (a cut cable): no hang on a dead socket.
    keepAlive: true,
  });
  // An idle client whose server went away: reported by the next query, never an uncaught error.
  pool.on("error", () => {});
  // A client in use (between the statements of a transaction, say) whose server went away: its
  // statement fails, and pg emits the same error on the client, where no listener would end the process.
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}

/** SQLSTATEs of a database that went away or is coming back: 57P01-57P03 (shut down, starting up), 53300 (too many connections). */
const AWAY = new Set(["57P01", "57P02", "57P03", "53300"]);
/** Node's socket errors of a server that is not there (now). */
const UNREACHABLE = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"]);

/**
 * Whether `err` (or what caused it) says the database is away for now
 * rather than that the statement is wrong: the connection was lost or
 * refused, or the server is shutting down or starting. Worth trying again
 * once it is back; any other error is the statement's own.
 */
export function transient(err: unknown): boolean {
  for (const e of causes(err)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && (code.startsWith("08") || AWAY.has(code) || UNREACHABLE.has(code))) return true;
    // pg's own words for a connection it lost or could not make in time (no code).
    if (/^Connection terminated|timeout exceeded when trying to connect|not queryable/.test(e.message)) return true;
  }
  return false;
}

/**
 * A duplicate key (23505): a retried append whose earlier try was committed
 * before its answer was lost with the connection (every event's seq is
 * written once, by the one writer holding the run's lease).
 */
export function isUniqueViolation(err: unknown): boolean {
  return causes(err).some((e) => (e as { code?: unknown }).code === "23505");
}

/** Run `work` in one transaction on one client of the pool. */
export async function transaction<T>(pool: pg.Pool, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
}

/** A one-line error for a failed database operation, naming the database but never its password. */
export function storeError(url: string, what: string, err: unknown): RuntimeError {
  if (err instanceof RuntimeError) return err;
  const message = describeError(err).split(url).join(safeUrl(url));
  return new RuntimeError("STORE", `${what} (${safeUrl(url)}): ${message}`, { cause: err });
}

/**
 * `read` again after a growing pause while it fails because the database is
 * away (`transient`), for up to 30 s (`retryPolicies.storeRead`): a read (or
 * a write that sets what it sets whatever came before) has nothing to
 * repeat, and a server's stream of a run reads on through a restart instead
 * of ending.
 */
export function reading<T>(read: () => Promise<T>): Promise<T> {
  return retry(read, { policy: retryPolicies.storeRead, isRetryable: transient });
}
