/**
 * How a SQLite file of the embedded store reaches the schema this code
 * writes (docs/scale-out.md#migrations): numbered migrations, applied in
 * order from the file's `schema_version` (a row of its `meta` table), in one
 * immediate transaction; a file a newer runtime migrated is refused. Beside
 * them, indexes that older runtimes read as well (so adding one bumps no
 * version and an older runtime still opens the file), each built when a
 * file lacks it. Processes opening one file at once (a server and its
 * workers starting together) migrate it once: the migration takes the
 * write lock first and reads the version again under it.
 */
import type Database from "better-sqlite3";
import { RuntimeError } from "../../errors.js";

export interface Migration {
  version: number;
  name: string;
  /** Apply this migration to a file at version `from` (0: a new file). */
  up(db: Database.Database, from: number): void;
}

export interface IndexStep {
  name: string;
  /** Whether the file lacks the index (a cheap read). */
  needed(db: Database.Database): boolean;
  build(db: Database.Database): void;
}

export interface Schema {
  migrations: readonly Migration[];
  indexes?: readonly IndexStep[];
  /** The message refusing a file of a newer `found` version. */
  tooNew(file: string, found: string, supported: number): string;
}

/** How long opening a file waits for another process migrating it (a large store takes seconds). */
const MIGRATION_WAIT_MS = 120_000;

export function latestVersion(schema: Schema): number {
  return schema.migrations.at(-1)?.version ?? 0;
}

/** Bring the file open in `db` to `schema`; throws a RuntimeError for a file of a newer version. */
export function migrate(db: Database.Database, file: string, schema: Schema, busyTimeoutMs: number): void {
  db.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  const latest = latestVersion(schema);
  const pending = (schema.indexes ?? []).some((i) => i.needed(db));
  if (schemaVersion(db, file, schema) === latest && !pending) return;
  db.pragma(`busy_timeout = ${Math.max(busyTimeoutMs, MIGRATION_WAIT_MS)}`);
  try {
    db.transaction(() => {
      const found = schemaVersion(db, file, schema);
      if (found < latest) {
        for (const m of schema.migrations) if (m.version > found) m.up(db, found);
        db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?)").run(String(latest));
      }
      for (const index of schema.indexes ?? []) if (index.needed(db)) index.build(db);
    }).immediate();
  } finally {
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
  }
}

/** The file's schema_version (0 for a new file); a newer one than this code's is refused. */
function schemaVersion(db: Database.Database, file: string, schema: Schema): number {
  const row = db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get() as { value: string } | undefined;
  if (row === undefined) return 0;
  const found = Number(row.value);
  const latest = latestVersion(schema);
  if (!(found <= latest)) throw new RuntimeError("USAGE", schema.tooNew(file, row.value, latest));
  return found;
}

/** Whether the file's meta table holds `key` = `value` (the version of an index step). */
export function hasMeta(db: Database.Database, key: string, value: string): boolean {
  const row = db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | undefined;
  return row?.value === value;
}

export function setMeta(db: Database.Database, key: string, value: string): void {
  db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)").run(key, value);
}
