/**
 * Attachments in SQLite (src/store/attachments.ts): `<traceDir>/attachments.db`,
 * a file of its own so that runs without attachments never open it and the
 * run store's schema is unchanged.
 */
import { join } from "node:path";
import Database from "better-sqlite3";
import type { AttachmentStore, StoredBytes } from "../attachments.js";
import { migrate, type Schema } from "./schema.js";
import { makeDirectory } from "./trace-store.js";

const SCHEMA: Schema = {
  migrations: [
    {
      version: 1,
      name: "attachment bytes by hash",
      up: (db) =>
        db.exec("CREATE TABLE attachments (sha256 TEXT PRIMARY KEY, media_type TEXT NOT NULL, size INTEGER NOT NULL, data BLOB NOT NULL) WITHOUT ROWID"),
    },
  ],
  tooNew: (file, found, supported) => `${file} holds attachments of schema_version ${found}; this runtime reads up to ${supported}`,
};

const BUSY_TIMEOUT_MS = 5000;

export class SqliteAttachments implements AttachmentStore {
  private readonly db: Database.Database;

  /** Open the attachments of `traceDir`; `create: false` refuses a missing file (reading a stored run). */
  constructor(traceDir: string, options: { create?: boolean } = {}) {
    const file = join(traceDir, "attachments.db");
    if (options.create !== false) makeDirectory(traceDir);
    this.db = new Database(file, { fileMustExist: options.create === false });
    try {
      this.db.pragma("journal_mode = WAL");
      this.db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      migrate(this.db, file, SCHEMA, BUSY_TIMEOUT_MS);
    } catch (err) {
      this.db.close();
      throw err;
    }
  }

  put(items: readonly StoredBytes[]): void {
    const insert = this.db.prepare("INSERT OR IGNORE INTO attachments (sha256, media_type, size, data) VALUES (?, ?, ?, ?)");
    this.db.transaction(() => {
      for (const item of items) insert.run(item.sha256, item.media_type, item.data.length, item.data);
    })();
  }

  get(sha256: string): Buffer | undefined {
    const row = this.db.prepare("SELECT data FROM attachments WHERE sha256 = ?").get(sha256) as { data: Buffer } | undefined;
    return row?.data;
  }

  close(): void {
    this.db.close();
  }
}
