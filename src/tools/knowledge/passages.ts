/**
 * A document cut into passages for retrieval (docs/knowledge.md): a passage
 * is one paragraph (a block between blank lines) with the headings above it,
 * so that "circle area" finds the paragraph under "## Circle" / "### Area".
 * Long paragraphs are cut at line ends near MAX_PASSAGE_CHARS.
 */

/** One passage of a document, with where it is. */
export interface Passage {
  /** The headings above the passage, outermost first, joined with " > " ("" when none). */
  heading: string;
  text: string;
  /** 1-based lines of the file where the passage starts and ends. */
  line: number;
  end_line: number;
}

/** A paragraph longer than this is cut at a line end (or hard, for one long line). */
export const MAX_PASSAGE_CHARS = 1200;

const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
const FENCE = /^\s*(```|~~~)/;

/** The passages of a Markdown or plain-text document, in document order. */
export function passagesOf(text: string): Passage[] {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const headings: string[] = [];
  const passages: Passage[] = [];
  let block: string[] = [];
  let start = 0;
  let inFence = false;

  const flush = () => {
    if (block.some((l) => l.trim() !== "")) passages.push(...cut(block, start + 1, headings.filter(Boolean).join(" > ")));
    block = [];
  };

  lines.forEach((line, index) => {
    if (FENCE.test(line)) inFence = !inFence;
    const heading = inFence ? undefined : HEADING.exec(line);
    if (heading) {
      flush();
      const level = heading[1]!.length;
      headings.length = level - 1;
      headings[level - 1] = heading[2]!;
      return;
    }
    if (!inFence && line.trim() === "") {
      flush();
      return;
    }
    if (block.length === 0) start = index;
    block.push(line);
  });
  flush();
  return passages;
}

/** A block as one passage, or several when it is long. */
function cut(block: string[], firstLine: number, heading: string): Passage[] {
  const out: Passage[] = [];
  let lines: string[] = [];
  let size = 0;
  let line = firstLine;
  const push = () => {
    if (lines.length === 0) return;
    out.push({ heading, text: lines.join("\n").trim(), line, end_line: line + lines.length - 1 });
    line += lines.length;
    lines = [];
    size = 0;
  };
  for (const text of block) {
    if (size > 0 && size + text.length > MAX_PASSAGE_CHARS) push();
    if (text.length > MAX_PASSAGE_CHARS) {
      // One very long line: several passages on the same line.
      for (let i = 0; i < text.length; i += MAX_PASSAGE_CHARS) {
        out.push({ heading, text: text.slice(i, i + MAX_PASSAGE_CHARS), line, end_line: line });
      }
      line += 1;
      continue;
    }
    lines.push(text);
    size += text.length + 1;
  }
  push();
  return out;
}
