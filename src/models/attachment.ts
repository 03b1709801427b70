/**
 * Files a run is given with its request (docs/attachments.md): images (png,
 * jpeg, webp, gif) and PDFs, each checked against the caps here before any
 * request, stored with the run by their SHA-256 (src/store/attachments.ts)
 * and sent on the run's first user message.
 *
 * An `Attachment` holds its bytes in a private field and serialises as its
 * reference (name, media type, size, hash): JSON of a message, of a journal
 * entry, of an event or a trace never carries the bytes, and a request's
 * fingerprint (src/engine/journal.ts) covers them through the hash.
 */
import { createHash } from "node:crypto";
import { RuntimeError } from "../errors.js";
import type { AttachmentRef } from "../events/types.js";

/** What a model may take (a model's `attachments`, docs/team-file.md). */
export type AttachmentKind = "image" | "pdf";

/** The media types taken, and what each is. */
export const MEDIA_TYPES: Readonly<Record<string, AttachmentKind>> = {
  "image/png": "image",
  "image/jpeg": "image",
  "image/webp": "image",
  "image/gif": "image",
  "application/pdf": "pdf",
};

/** At most this many attachments a run. */
export const MAX_ATTACHMENTS = 10;
/** At most this many bytes an attachment: OpenAI's cap on one image (and a PDF's share of a request). */
export const MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024;
/** At most this many bytes all of a run's attachments together (OpenAI's cap on a request's files). */
export const MAX_ATTACHMENTS_TOTAL_BYTES = 50 * 1024 * 1024;

/** An attachment as the journal, events and traces name it: the event vocabulary's (src/events/types.ts). */
export type { AttachmentRef };

export class Attachment implements AttachmentRef {
  readonly size: number;
  readonly sha256: string;
  readonly #data: Buffer;

  constructor(
    readonly name: string,
    readonly media_type: string,
    data: Buffer,
  ) {
    this.#data = data;
    this.size = data.length;
    this.sha256 = createHash("sha256").update(data).digest("hex");
  }

  get kind(): AttachmentKind {
    return MEDIA_TYPES[this.media_type] ?? "image";
  }

  get data(): Buffer {
    return this.#data;
  }

  /** The bytes as a `data:` URL, what both APIs take inline. */
  dataUrl(): string {
    return `data:${this.media_type};base64,${this.#data.toString("base64")}`;
  }

  toJSON(): AttachmentRef {
    return { name: this.name, media_type: this.media_type, size: this.size, sha256: this.sha256 };
  }
}

/** The media type the bytes are, by their first bytes; undefined for none taken. */
export function sniffMediaType(data: Buffer): string | undefined {
  const ascii = (from: number, to: number) => data.subarray(from, to).toString("latin1");
  if (data.length >= 8 && data.readUInt32BE(0) === 0x89504e47) return "image/png";
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return "image/jpeg";
  if (ascii(0, 4) === "GIF8") return "image/gif";
  if (ascii(0, 4) === "RIFF" && ascii(8, 12) === "WEBP") return "image/webp";
  if (ascii(0, 5) === "%PDF-") return "application/pdf";
  return undefined;
}

const TAKEN = "png, jpeg, webp, gif or pdf";

/**
 * An attachment of `data` named `name`, of the media type given or else the
 * one its bytes are. Throws USAGE (exit 2, HTTP 400) for a file over the
 * size cap or of a type not taken.
 */
export function makeAttachment(name: string, data: Buffer, mediaType?: string): Attachment {
  checkAttachmentSize(name, data.length);
  if (data.length === 0) throw new RuntimeError("USAGE", `attachment ${name} is empty`);
  const sniffed = sniffMediaType(data);
  const type = mediaType?.toLowerCase() ?? sniffed;
  if (type === undefined || MEDIA_TYPES[type] === undefined)
    throw new RuntimeError("USAGE", `attachment ${name} is not a ${TAKEN} file${mediaType ? ` (media type ${mediaType})` : ""}`);
  if (sniffed !== undefined && sniffed !== type) throw new RuntimeError("USAGE", `attachment ${name} says ${type} but its bytes are ${sniffed}`);
  return new Attachment(name, type, data);
}

/** Throws USAGE for a file of `size` bytes over the cap of one attachment (a file is refused so before it is read). */
export function checkAttachmentSize(name: string, size: number): void {
  if (size > MAX_ATTACHMENT_BYTES)
    throw new RuntimeError("USAGE", `attachment ${name} is ${mib(size)}, over the cap of ${mib(MAX_ATTACHMENT_BYTES)} an attachment`);
}

/** Throws USAGE when a run's attachments pass the count or total size cap. */
export function checkAttachmentCaps(attachments: readonly AttachmentRef[]): void {
  if (attachments.length > MAX_ATTACHMENTS) throw new RuntimeError("USAGE", `${attachments.length} attachments: a run takes at most ${MAX_ATTACHMENTS}`);
  const total = attachments.reduce((sum, a) => sum + a.size, 0);
  if (total > MAX_ATTACHMENTS_TOTAL_BYTES)
    throw new RuntimeError("USAGE", `the attachments are ${mib(total)} together, over the cap of ${mib(MAX_ATTACHMENTS_TOTAL_BYTES)} a run`);
}

function mib(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MiB`;
}
