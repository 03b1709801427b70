/**
 * The port of attachments (docs/attachments.md, docs/scale-out.md#stores):
 * the bytes of the files runs were given, content-addressed by their
 * SHA-256. A run's journal names its attachments by hash (its `run` entry),
 * so a resume or a replay reads the same bytes back from here. Adapters:
 * SQLite (`<traceDir>/attachments.db`, src/store/sqlite/attachments.ts) and
 * PostgreSQL (src/store/postgres/attachments.ts).
 */

/** Bytes as stored: their hash and media type. */
export interface StoredBytes {
  sha256: string;
  media_type: string;
  data: Buffer;
}

export interface AttachmentStore {
  /** Keep each one's bytes under its hash; bytes stored already stay as they are. */
  put(items: readonly StoredBytes[]): void | Promise<void>;
  /** The bytes stored under `sha256`, or undefined. */
  get(sha256: string): Buffer | undefined | Promise<Buffer | undefined>;
  close(): void | Promise<void>;
}
