/**
 * Attachments on PostgreSQL (src/store/attachments.ts): the `attachments`
 * table of the `runtime` schema (migration 6), bytes by their SHA-256.
 */
import type pg from "pg";
import type { AttachmentStore, StoredBytes } from "../attachments.js";
import { SCHEMA as S, storeError } from "./connect.js";

export class PostgresAttachments implements AttachmentStore {
  constructor(
    private readonly pool: pg.Pool,
    private readonly url: string,
  ) {}

  async put(items: readonly StoredBytes[]): Promise<void> {
    if (items.length === 0) return;
    try {
      await this.pool.query(
        `INSERT INTO ${S}.attachments (sha256, media_type, size, data)
         SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::bytea[]) ON CONFLICT (sha256) DO NOTHING`,
        [items.map((i) => i.sha256), items.map((i) => i.media_type), items.map((i) => i.data.length), items.map((i) => i.data)],
      );
    } catch (err) {
      throw storeError(this.url, "cannot store attachments", err);
    }
  }

  async get(sha256: string): Promise<Buffer | undefined> {
    try {
      const { rows } = await this.pool.query<{ data: Buffer }>(`SELECT data FROM ${S}.attachments WHERE sha256 = $1`, [sha256]);
      return rows[0]?.data;
    } catch (err) {
      throw storeError(this.url, `cannot read attachment ${sha256}`, err);
    }
  }

  /** The pool is the store's. */
  close(): void {}
}
