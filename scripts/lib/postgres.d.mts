export interface TestPostgres {
  /** `postgres://...` of the cluster's `postgres` database. */
  url: string;
  port: number;
  /** A new empty database; its URL. */
  createDatabase(prefix?: string): Promise<string>;
  stop(): void;
  /** `pg_ctl restart -m fast`: every connection is terminated; the server is back on the same port when it returns. */
  restart(): Promise<void>;
}

export function startPostgres(): Promise<TestPostgres>;
