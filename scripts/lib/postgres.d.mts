export interface TestPostgres {
  /** `postgres://...` of the cluster's `postgres` database. */
  url: string;
  port: number;
  /** A new empty database; its URL. */
  createDatabase(prefix?: string): Promise<string>;
  stop(): void;
}

export function startPostgres(): Promise<TestPostgres>;
