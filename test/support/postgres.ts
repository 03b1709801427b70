/**
 * A real PostgreSQL for the tests (and the benchmarks, which share the one
 * implementation: scripts/lib/postgres.mjs, plain JS so bench/ runs it with
 * node alone): `initdb` into a temporary directory, a server on a free
 * loopback port, one fresh database per `createDatabase`, stopped with
 * `pg_ctl stop`. A machine without PostgreSQL fails naming what is missing:
 * `scripts/test.sh` installs it.
 */
import { afterAll, beforeAll } from "vitest";
import { startPostgres, type TestPostgres } from "../../scripts/lib/postgres.mjs";

export { startPostgres, type TestPostgres };

/**
 * The one cluster of a test file: started before its tests, stopped after
 * them. Read its members inside tests and hooks (not at the file's top
 * level, where it has not started yet).
 */
export function usePostgres(): TestPostgres {
  let cluster: TestPostgres | undefined;
  beforeAll(async () => {
    cluster = await startPostgres();
  });
  afterAll(() => cluster?.stop());
  const started = (): TestPostgres => {
    if (!cluster) throw new Error("the test PostgreSQL is read before beforeAll started it");
    return cluster;
  };
  return {
    get url() {
      return started().url;
    },
    get port() {
      return started().port;
    },
    createDatabase: (prefix) => started().createDatabase(prefix),
    stop: () => started().stop(),
    restart: () => started().restart(),
    down: () => started().down(),
    up: () => started().up(),
  };
}
