/**
 * Personal data in text (docs/guardrails.md#checks): candidates found by
 * pattern, then confirmed by `validator` (a card number's Luhn digit, an
 * IBAN's check digits, an address's shape), so that order numbers and
 * dates are not taken for cards or phones. They are looked for in the
 * text's `pii` fold (src/guardrails/fold.ts: any decimal digit, any space or
 * dash, no invisible characters), and found where they are written.
 */
import validator from "validator";
import type { PiiKind } from "../config/types.js";
import { fold } from "./fold.js";

/** Where one piece of personal data is, in UTF-16 indices. */
export interface PiiSpan {
  type: PiiKind;
  start: number;
  end: number;
}

const MAY_HOLD = /[\p{N}@\ufe6b\uff20]/u;

const digits = (text: string) => text.replace(/\D/g, "");

interface Finder {
  pattern: RegExp;
  confirm(match: string): boolean;
  /** A match that is not confirmed may be the data and a word after it: try it without its last words. */
  shrinks?: boolean;
}

// Cards and IBANs first: their digits would otherwise read as phone numbers.
const FINDERS: Array<[PiiKind, Finder]> = [
  ["credit_card", { pattern: /(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])/g, confirm: (m) => validator.isCreditCard(digits(m)) }],
  ["iban", { pattern: /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b/gi, confirm: (m) => validator.isIBAN(m.replace(/ /g, "").toUpperCase()), shrinks: true }],
  ["email", { pattern: /[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)*\.\p{L}{2,}/gu, confirm: (m) => validator.isEmail(m) }],
  [
    "phone",
    {
      // Not part of a decimal number (1.5), but it may end a sentence.
      pattern: /(?<![\w.])(?:\+|00)?\d[\d ().-]{6,18}\d(?!\w|\.\d)/g,
      // 8 to 15 digits (E.164), with a separator or a + (a bare run of digits is more often an id).
      confirm: (m) => {
        const n = digits(m).length;
        return n >= 8 && n <= 15 && /[+ ().-]/.test(m) && !/^\d{4}-\d{2}-\d{2}$/.test(m);
      },
    },
  ],
];

/** Every piece of personal data of the kinds asked for, in text order, none overlapping. */
export function findPii(text: string, kinds: readonly PiiKind[]): PiiSpan[] {
  // Every kind has a digit or an @ (in some form: a full-width one, a superscript, ...).
  if (!MAY_HOLD.test(text)) return [];
  const folded = fold(text, "pii");
  return findFolded(folded.text, kinds).map((s) => {
    const [start, end] = folded.original(s.start, s.end);
    return { ...s, start, end };
  });
}

function findFolded(text: string, kinds: readonly PiiKind[]): PiiSpan[] {
  const found: PiiSpan[] = [];
  const overlaps = (start: number, end: number) => found.some((s) => start < s.end && s.start < end);
  for (const [type, finder] of FINDERS) {
    for (const match of text.matchAll(finder.pattern)) {
      const start = match.index ?? 0;
      let matched = match[0];
      while (!finder.confirm(matched) && finder.shrinks && matched.includes(" ")) matched = matched.slice(0, matched.lastIndexOf(" "));
      const end = start + matched.length;
      // A card's digits are not a phone number, whichever kinds are asked for.
      if (overlaps(start, end) || !finder.confirm(matched)) continue;
      found.push({ type, start, end });
    }
  }
  return found.filter((s) => kinds.includes(s.type)).sort((a, b) => a.start - b.start);
}

const NAMES: Record<PiiKind, string> = { email: "an e-mail address", phone: "a phone number", credit_card: "a credit card number", iban: "an IBAN" };

/** "an e-mail address and a credit card number". */
export function describePii(spans: readonly PiiSpan[]): string {
  const kinds = [...new Set(spans.map((s) => NAMES[s.type]))];
  return kinds.length <= 1 ? (kinds[0] ?? "") : `${kinds.slice(0, -1).join(", ")} and ${kinds.at(-1)}`;
}
