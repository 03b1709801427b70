export interface TestPostgres {
  /** `postgres://...` of the cluster's `postgres` database. */
  url: string;
  port: number;
  /** A new empty database; its URL. */
  createDatabase(prefix?: string): Promise<string>;
  stop(): void;
  /** `pg_ctl restart -m fast`: every connection is terminated; the server is back on the same port when it returns. */
  restart(): Promise<void>;
  /** `pg_ctl stop -m fast`, the data kept: the port refuses connections until `up()`. */
  down(): Promise<void>;
  /** `pg_ctl start` again after `down()`, on the same port; resolves once it accepts connections. */
  up(): Promise<void>;
}

/** `settings`: server settings (`-c name=value`) beside the test ones, which they override. */
export function startPostgres(options?: { settings?: Record<string, string | number> }): Promise<TestPostgres>;
