/**
 * Where a JSON pointer lives in the YAML source, so every problem can name a
 * line and a column.
 */
import type { LineCounter } from "yaml";
import type { ConfigProblem } from "../errors.js";

/** Offsets of one node: its value and, for a mapping entry, its key. */
export interface NodeSpan {
  value: number;
  key?: number;
  /** The value is a block mapping or sequence: point at the key that introduces it. */
  block: boolean;
}

/** Pointer → source offsets for one parsed file. */
export class SourceMap {
  private readonly spans = new Map<string, NodeSpan>();

  constructor(
    readonly file: string,
    private readonly lines: LineCounter,
  ) {}

  /** Remember where `pointer` lives; the first record wins (an alias points back to its anchor). */
  record(pointer: string, span: NodeSpan): void {
    if (!this.spans.has(pointer)) this.spans.set(pointer, span);
  }

  /**
   * 1-based line and column of the node at `pointer`, or of its nearest
   * existing ancestor (a missing key is reported at the mapping that lacks it).
   * `at: "key"` points at the key of a mapping entry instead of its value.
   */
  position(pointer: string, at: "value" | "key" = "value"): { line: number; col: number } {
    let current = pointer;
    for (;;) {
      const span = this.spans.get(current);
      if (span) {
        const offset = (at === "key" || span.block) && span.key !== undefined ? span.key : span.value;
        return this.lines.linePos(offset);
      }
      if (current === "") return { line: 1, col: 1 };
      current = current.slice(0, current.lastIndexOf("/"));
      at = "value";
    }
  }

  /** 1-based line and column of a source offset. */
  offsetPosition(offset: number): { line: number; col: number } {
    return this.lines.linePos(offset);
  }

  /** A problem located at `pointer`. */
  problem(pointer: string, message: string, at: "value" | "key" = "value"): ConfigProblem {
    return { file: this.file, ...this.position(pointer, at), path: pointer, message };
  }
}

/** RFC 6901 escaping of one pointer segment. */
export function pointerSegment(key: string | number): string {
  return String(key).replace(/~/g, "~0").replace(/\//g, "~1");
}

/** `/a/b` from segments. */
export function pointer(...segments: Array<string | number>): string {
  return segments.map((s) => `/${pointerSegment(s)}`).join("");
}
