/**
 * A real PostgreSQL for the tests (and the benchmarks, which share the one
 * implementation: scripts/lib/postgres.mjs, plain JS so bench/ runs it with
 * node alone): `initdb` into a temporary directory, a server on a free
 * loopback port, one fresh database per `createDatabase`, stopped with
 * `pg_ctl stop`. A machine without PostgreSQL fails naming what is missing:
 * `scripts/test.sh` installs it.
 */
export { startPostgres, type TestPostgres } from "../../scripts/lib/postgres.mjs";
