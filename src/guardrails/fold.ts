/**
 * The folded copies of a text that `deny` and `pii` match on
 * (docs/guardrails.md#what-a-match-sees), so that a look-alike spelling of a
 * denied word or of personal data is caught as the plain one is:
 *
 * - `plain`: NFKC (full-width and mathematical letters, ligatures, NBSP and
 *   the other compatibility forms become their plain ones), with the
 *   default-ignorable and format characters removed (zero-width space and
 *   joiners, soft hyphen, bidi controls, variation selectors, tags).
 * - `skeleton` (`deny`): `plain`, then combining marks removed and the common
 *   Cyrillic, Greek, Cherokee and small-capital look-alikes of Latin letters
 *   replaced by them.
 * - `pii`: `plain` without combining marks, every Unicode decimal digit as
 *   its ASCII digit, every space separator as a space, every dash and
 *   hyphen as `-`.
 *
 * Each folded UTF-16 unit remembers the span of the original text it came
 * from, so what matched the folded copy is masked in the original.
 */

export type FoldMode = "plain" | "skeleton" | "pii";

export interface Folded {
  text: string;
  /** The span of the original text that the folded span [start, end) came from. */
  original(start: number, end: number): [number, number];
}

const ASCII = /^[\x00-\x7f]*$/;
const IGNORABLE = /^[\p{Default_Ignorable_Code_Point}\p{Cf}]$/u;
const MARK = /^\p{M}$/u;
const MARKS = /\p{M}/gu;
const DIGIT = /^\p{Nd}$/u;
const SPACE = /^\p{Zs}$/u;
// Hyphen, non-breaking hyphen, figure dash, en and em dash, horizontal bar, minus sign, and their small and full-width forms.
const DASH = /^[\u2010-\u2015\u2212\u2796\ufe58\ufe63\uff0d]$/u;

/** Latin letters' common look-alikes in other scripts (after NFKC and without marks); ASCII is left as it is. */
const LOOK_ALIKES: Record<string, string> = Object.fromEntries(
  [
    // Cyrillic
    "аa вb еe кk мm нh оo рp сc тt уy хx ѕs іi јj ԁd ԛq ԝw һh ӏl ԍg ѵv үy",
    "АA ВB ЕE КK МM НH ОO РP СC ТT ХX УY ЅS ІI ЈJ ԚQ ԜW ҺH ӀI ѴV ҮY",
    // Greek
    "αa βb γy εe ιi κk νv οo ρp τt υu χx ωw",
    "ΑA ΒB ΕE ΖZ ΗH ΙI ΚK ΜM ΝN ΟO ΡP ΤT ΥY ΧX",
    // Latin variants and small capitals
    "ıi ȷj ɡg ɑa ɩi ʟl ᴀa ʙb ᴄc ᴅd ᴇe ɢg ʜh ɪi ᴊj ᴋk ᴍm ɴn ᴏo ᴘp ʀr ꜱs ᴛt ᴜu ᴠv ᴡw ʏy ᴢz",
    // Cherokee and Armenian
    "ᎪA ᏴB ᏟC ᎬE ᎻH ᎫJ ᏦK ᎷM ᏢP ᏚS ᎢT ᏔW օo սu",
  ]
    .join(" ")
    .split(" ")
    .filter((pair) => [...pair].length === 2)
    .map((pair) => [...pair] as [string, string]),
);

/** The folds of the last text folded: the guardrails of one check fold the same text. */
let last: { text: string; folds: Partial<Record<FoldMode, Folded>> } = { text: "", folds: {} };

/** `text` folded for `mode`; an ASCII text is its own fold. */
export function fold(text: string, mode: FoldMode): Folded {
  if (ASCII.test(text)) return { text, original: (start, end) => [start, end] };
  if (last.text !== text) last = { text, folds: {} };
  last.folds[mode] ??= foldText(text, mode);
  return last.folds[mode];
}

/**
 * A stretch of the fold and where it came from: `same` (ASCII copied as it
 * is, index for index), or one cluster folded (all of it from the whole cluster).
 */
interface Piece {
  at: number;
  length: number;
  from: number;
  to: number;
  same: boolean;
}

const NOT_ASCII = /[^\x00-\x7f]/g;

function foldText(text: string, mode: FoldMode): Folded {
  let out = "";
  const pieces: Piece[] = [];
  const copy = (from: number, to: number): void => {
    if (to <= from) return;
    pieces.push({ at: out.length, length: to - from, from, to, same: true });
    out += text.slice(from, to);
  };
  // A cluster: one character and the combining marks after it (ignorables between them skipped).
  let cluster = "";
  let from = 0;
  let to = 0;
  const flush = (): void => {
    if (cluster === "") return;
    const folded = foldCluster(cluster, mode);
    if (folded) pieces.push({ at: out.length, length: folded.length, from, to, same: false });
    out += folded;
    cluster = "";
  };
  let at = 0;
  while (at < text.length) {
    // ASCII up to the next other character, less the one before it, which may be the base of its marks.
    NOT_ASCII.lastIndex = at;
    const other = NOT_ASCII.exec(text)?.index ?? text.length;
    if (other > at) {
      flush();
      const base = other < text.length ? other - 1 : other;
      copy(at, base);
      at = base;
      if (at === text.length) break;
    }
    const char = String.fromCodePoint(text.codePointAt(at)!);
    const next = at + char.length;
    if (IGNORABLE.test(char)) {
      if (cluster !== "") to = next;
    } else if (MARK.test(char) && cluster !== "") {
      cluster += char;
      to = next;
    } else {
      flush();
      cluster = char;
      from = at;
      to = next;
    }
    at = next;
  }
  flush();
  const pieceOf = (index: number): Piece | undefined => {
    let lo = 0;
    let hi = pieces.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (pieces[mid]!.at <= index) lo = mid;
      else hi = mid - 1;
    }
    return pieces[lo];
  };
  return {
    text: out,
    original: (start, end) => {
      const first = pieceOf(start);
      const last = pieceOf(Math.max(start, end - 1));
      if (!first || !last) return [text.length, text.length];
      return [first.same ? first.from + (start - first.at) : first.from, last.same ? last.from + (end - last.at) : last.to];
    },
  };
}

function foldCluster(cluster: string, mode: FoldMode): string {
  const nfkc = cluster.normalize("NFKC");
  if (mode === "plain") return nfkc;
  const bare = nfkc.normalize("NFD").replace(MARKS, "").normalize("NFC");
  let out = "";
  for (const char of bare) out += mode === "skeleton" ? (LOOK_ALIKES[char] ?? char) : piiChar(char);
  return out;
}

function piiChar(char: string): string {
  if (char.length === 1 && char.charCodeAt(0) < 0x80) return char;
  if (DIGIT.test(char)) return String(digitValue(char.codePointAt(0)!));
  if (SPACE.test(char)) return " ";
  if (DASH.test(char)) return "-";
  return char;
}

/** A decimal digit's value: Unicode's digits come in runs of ten from 0, some runs side by side. */
function digitValue(code: number): number {
  let first = code;
  while (first > 0 && DIGIT.test(String.fromCodePoint(first - 1))) first--;
  return (code - first) % 10;
}
