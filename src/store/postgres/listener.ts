/**
 * One connection that LISTENs to PostgreSQL channels for a process
 * (docs/scale-out.md#live-events): new runs for workers (`runtime_runs`),
 * new events of runs for whoever follows them (`runtime_events`, src/store/follow.ts).
 * It lives with the store because following a run is the store's; the
 * queue's workers use it too. It reconnects after a
 * lost connection, with a growing pause (`retryPolicies.listenerReconnect`), and calls `onReconnect` so that
 * whoever listens catches up on what it may have missed meanwhile.
 */
import pg from "pg";
import { unreachable } from "../../errors.js";
import { pauseBefore, retryPolicies } from "../../retry.js";

type Handler = (payload: string) => void;

export class ChannelListener {
  private client: pg.Client | undefined;
  private readonly handlers = new Map<string, Set<Handler>>();
  private readonly reconnected = new Set<() => void>();
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private connected = false;

  constructor(private readonly url: string) {}

  /** Whether the connection is up now (readiness). */
  get up(): boolean {
    return this.connected;
  }

  /** Connect and LISTEN; rejects when the first connection fails. */
  async start(): Promise<void> {
    await this.connect();
  }

  /** Call `handler` with each notification's payload on `channel`. Returns the unsubscribe. */
  on(channel: string, handler: Handler): () => void {
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      if (this.client && this.connected) void this.client.query(`LISTEN ${ident(channel)}`).catch(() => {});
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  /** Call `fn` after each reconnection (notifications may have been missed). */
  onReconnect(fn: () => void): () => void {
    this.reconnected.add(fn);
    return () => this.reconnected.delete(fn);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retry) clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    this.connected = false;
    await client?.end().catch(() => {});
  }

  private async connect(attempt = 0): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, connectionTimeoutMillis: 10_000, keepAlive: true, application_name: "runtime-listener" });
    client.on("notification", (n) => {
      for (const handler of this.handlers.get(n.channel) ?? []) handler(n.payload ?? "");
    });
    const lost = () => {
      if (this.client !== client) return;
      this.client = undefined;
      this.connected = false;
      client.end().catch(() => {});
      this.scheduleReconnect(attempt + 1);
    };
    client.on("error", lost);
    client.on("end", lost);
    try {
      await client.connect();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${ident(channel)}`);
    } catch (err) {
      // The database went away again (it is restarting): this connection is not kept; the caller tries again.
      await client.end().catch(() => {});
      throw err;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.connected = true;
    if (attempt > 0) for (const fn of this.reconnected) fn();
  }

  private scheduleReconnect(attempt: number): void {
    if (this.closed) return;
    const delay = pauseBefore(retryPolicies.listenerReconnect, attempt - 1);
    this.retry = setTimeout(() => {
      this.connect(attempt).catch(() => this.scheduleReconnect(attempt + 1));
    }, delay);
    this.retry.unref();
  }
}

function ident(channel: string): string {
  if (!/^[a-z_][a-z0-9_]*$/.test(channel)) unreachable(`not a channel name: ${channel}`);
  return channel;
}
