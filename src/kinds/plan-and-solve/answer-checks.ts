/**
 * The cheap, deterministic checks of VERIFYING (docs/design/plan-and-solve-design.md diagram 1,
 * "Verify Calculations"; docs/plan-and-solve.md#verifying). No model call;
 * they cost a scan of the answer and the results.
 *
 * - *Computed*: the JSON numbers of successful tool results.
 * - *Supported*: a computed number, any number written in a tool result, a
 *   tool's arguments or the question, or one step from two of those (a sum,
 *   difference, product or quotient: the diameter 10 from the radius 5 and
 *   the 2 of `2 * pi * 5`); equal when the answer's number is the supporting
 *   one rounded to the answer's decimals (78.5 for 78.54).
 * - *Misquoted*: an unsupported number within a factor of NEAR_FACTOR of a
 *   computed one, or a computed one with its decimal point moved (785.4 for
 *   78.54) when the answer does not also quote the computed one (then it is
 *   a unit conversion: 31.42 m, 3142 cm). A number far from every computed one (a year, "2 decimals") is
 *   not judged: the check looks for a misquoted result, not for every claim.
 * - *Mislabelled*: a computed number the answer names with a word that
 *   belongs to another result's item or arguments and not to its own ("the
 *   area is 31.42" when 31.42 came from the item "Compute the circumference").
 *
 * Numbers written in words ("seventy") are numbers too.
 */

/** One successful tool call, as VERIFYING sees it. */
export interface RecordedResult {
  tool: string;
  arguments: unknown;
  result: unknown;
  /** The todo item the call was attributed to, when there was one. */
  item?: string;
}

/** How far (as a ratio) an unsupported number may be from a computed one and still be taken as a misquote of it. */
export const NEAR_FACTOR = 5;
/** At most this many distinct supporting numbers are combined in pairs (a few thousand products). */
const MAX_DERIVED_BASE = 60;

/** What in `answer` contradicts the recorded results; empty when nothing does. */
export function numberProblems(answer: string, question: string, recorded: readonly RecordedResult[]): string[] {
  const computed = recorded.flatMap((r) => jsonNumbers(r.result).map((value) => ({ value, from: r })));
  if (computed.length === 0) return [];
  const written = [
    ...computed.map((c) => c.value),
    ...recorded.flatMap((r) => [...textNumbers(JSON.stringify(r.result) ?? ""), ...textNumbers(JSON.stringify(r.arguments) ?? "")]),
    ...textNumbers(question),
  ];
  const derived = oneStep([...new Set(written)].slice(0, MAX_DERIVED_BASE));
  const labels = labelsOf(recorded);
  const problems: string[] = [];
  const seen = new Set<string>();
  const inAnswer = numbersIn(answer);
  // A computed figure the answer also quotes as it is: a power of ten away from it is a unit conversion (31.42 m, 3142 cm).
  const moved = (n: WrittenNumber, value: number) => shifted(n, value) && !inAnswer.some((a) => matches(a.value, a.decimals, value));
  for (const n of inAnswer) {
    if (seen.has(n.text)) continue;
    seen.add(n.text);
    const sources = computed.filter((c) => matches(n.value, n.decimals, c.value));
    if (sources.length > 0) {
      const wrong = mislabelled(answer, n, sources, computed, labels);
      if (wrong) problems.push(wrong);
      continue;
    }
    if (written.some((s) => matches(n.value, n.decimals, s)) || derived.some((s) => matches(n.value, n.decimals, s))) continue;
    const near = computed.filter(
      (c) => c.value !== 0 && Math.sign(c.value) === Math.sign(n.value) && (ratio(n.value, c.value) <= NEAR_FACTOR || moved(n, c.value)),
    );
    if (near.length === 0) continue;
    const closest = near.find((c) => moved(n, c.value)) ?? near.reduce((a, b) => (Math.abs(b.value - n.value) < Math.abs(a.value - n.value) ? b : a));
    problems.push(`the answer says ${n.text}, but no tool result supports it: ${source(closest.from)} returned ${closest.value}${forItem(closest.from)}`);
  }
  return problems;
}

/**
 * The answer's figures when no tool backs them: an item that names one of
 * the agent's tools which the run never called successfully, while the
 * answer states numbers the question does not.
 */
export function unbackedProblems(answer: string, question: string, unbacked: readonly { index: number; content: string; tool: string }[]): string[] {
  if (unbacked.length === 0) return [];
  const asked = textNumbers(question);
  const figures = numbersIn(answer).filter((n) => !asked.some((q) => matches(n.value, n.decimals, q)));
  if (figures.length === 0) return [];
  const shown = [...new Set(figures.map((f) => f.text))].join(", ");
  return unbacked.map(
    (u) => `item ${u.index} ("${u.content}") names ${u.tool}, which was never called: the answer's figures (${shown}) rest on no tool result`,
  );
}

/** Every JSON number of a value (arrays and objects walked, strings left alone), at most 1,000. */
function jsonNumbers(value: unknown): number[] {
  const out: number[] = [];
  const stack: unknown[] = [value];
  while (stack.length > 0 && out.length < 1000) {
    const v = stack.pop();
    if (typeof v === "number" && Number.isFinite(v)) out.push(v);
    else if (Array.isArray(v)) stack.push(...v);
    else if (typeof v === "object" && v !== null) stack.push(...Object.values(v));
  }
  return out;
}

const NUMBER = /(?<![\p{L}\p{N}_.])[-−]?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|(?<![\p{L}\p{N}_.])[-−]?\d+(?:\.\d+)?(?![\p{L}\d])/gu;

const UNITS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split(" ");
const TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split(" ");
const SCALES: Record<string, number> = { hundred: 100, thousand: 1e3, million: 1e6, billion: 1e9 };
const WORD = `(?:${[...UNITS, ...TENS.slice(2), ...Object.keys(SCALES)].join("|")})`;
const WORDS = new RegExp(`\\b${WORD}(?:(?:[\\s-]+|\\s+and\\s+)${WORD})*\\b`, "giu");

export interface WrittenNumber {
  value: number;
  text: string;
  decimals: number;
  /** Where it starts in the text. */
  at: number;
}

/**
 * The numbers written in a text, with their decimals ("1,234.5" is 1234.5;
 * "Qwen3" and "v2" are not numbers), and English number words from ten up
 * ("seventy", "two hundred and five"; "one" or "two" alone are left out, they
 * are seldom figures).
 */
export function numbersIn(text: string): WrittenNumber[] {
  const digits = [...text.matchAll(NUMBER)].map((m) => {
    const plain = m[0].replace(/,/g, "").replace("−", "-");
    const dot = plain.indexOf(".");
    return { value: Number(plain), text: m[0], decimals: dot < 0 ? 0 : plain.length - dot - 1, at: m.index ?? 0 };
  });
  const words = [...text.matchAll(WORDS)].flatMap((m) => {
    const value = wordsValue(m[0]);
    return value >= 10 ? [{ value, text: m[0], decimals: 0, at: m.index ?? 0 }] : [];
  });
  return [...digits, ...words].sort((a, b) => a.at - b.at);
}

function wordsValue(text: string): number {
  let total = 0;
  let group = 0;
  for (const w of text
    .toLowerCase()
    .split(/[\s-]+/)
    .filter((x) => x !== "and")) {
    const unit = UNITS.indexOf(w);
    const ten = TENS.indexOf(w);
    if (unit >= 0) group += unit;
    else if (ten >= 2) group += ten * 10;
    else if (w === "hundred") group = Math.max(group, 1) * 100;
    else {
      total += Math.max(group, 1) * (SCALES[w] ?? 1);
      group = 0;
    }
  }
  return total + group;
}

function textNumbers(text: string): number[] {
  return numbersIn(text).map((n) => n.value);
}

/** Every sum, difference, product and quotient of two of `base` (a number with itself included). */
function oneStep(base: readonly number[]): number[] {
  const out: number[] = [];
  for (const a of base) {
    for (const b of base) {
      out.push(a + b, a - b, a * b);
      if (b !== 0) out.push(a / b);
    }
  }
  return out;
}

/** `value`, written with `decimals` decimals, is `supported` rounded (a hair of slack for binary fractions). */
function matches(value: number, decimals: number, supported: number): boolean {
  const tolerance = 0.5 * 10 ** -decimals + 1e-9 * Math.max(1, Math.abs(supported));
  return Math.abs(value - supported) <= tolerance;
}

/** The number is the computed one with its decimal point moved by one to three places. */
function shifted(n: WrittenNumber, computed: number): boolean {
  return [1, 2, 3].some((k) => matches(n.value, n.decimals, computed * 10 ** k) || matches(n.value * 10 ** k, n.decimals, computed));
}

function ratio(a: number, b: number): number {
  const [x, y] = [Math.abs(a), Math.abs(b)];
  return Math.max(x, y) / Math.max(Math.min(x, y), Number.MIN_VALUE);
}

/** Words too common to name a result. */
const COMMON = new Set(
  (
    "the and with from that this then than into onto what which using use uses result results value values " +
    "compute computes calculate calculates find finds work works out answer give get make total number numbers " +
    "round decimals step item tool call"
  ).split(" "),
);

function wordsOf(text: string): string[] {
  return (text.toLowerCase().match(/\p{L}{4,}/gu) ?? []).filter((w) => !COMMON.has(w));
}

/** The words that name each recorded result: its item's and its string arguments', its tool's name left out. */
function labelsOf(recorded: readonly RecordedResult[]): Map<RecordedResult, Set<string>> {
  return new Map(
    recorded.map((r) => {
      const args = JSON.stringify(r.arguments ?? {}) ?? "";
      return [r, new Set([...wordsOf(r.item ?? ""), ...wordsOf(args.replace(/"[^"]*":/g, " "))].filter((w) => w !== r.tool))];
    }),
  );
}

/**
 * A computed figure named by another result's word: the few words before it
 * (back to the previous number or the start of the clause) hold a word that
 * labels some other result and none of this figure's sources.
 */
function mislabelled(
  answer: string,
  n: WrittenNumber,
  sources: readonly { value: number; from: RecordedResult }[],
  computed: readonly { value: number; from: RecordedResult }[],
  labels: Map<RecordedResult, Set<string>>,
): string | undefined {
  const before = answer.slice(0, n.at);
  const clause = before.slice(Math.max(before.search(/[^.;:!?\n\d]*$/u), 0));
  const context = wordsOf(clause.split(/\d/).at(-1) ?? "").slice(-6);
  const own = new Set(sources.flatMap((s) => [...(labels.get(s.from) ?? [])]));
  for (const word of context) {
    if (own.has(word)) return undefined;
    const other = computed.find((c) => labels.get(c.from)?.has(word));
    if (other) {
      const from = sources[0]!.from;
      return (
        `the answer gives ${n.text} as the ${word}, but ${source(other.from)} returned ${other.value}${forItem(other.from)}; ` +
        `${n.text} is what ${source(from)} returned${forItem(from)}`
      );
    }
  }
  return undefined;
}

function source(r: RecordedResult): string {
  return `${r.tool}(${brief(r.arguments)})`;
}

function forItem(r: RecordedResult): string {
  return r.item ? ` (item "${r.item}")` : "";
}

function brief(args: unknown): string {
  const text = JSON.stringify(args) ?? "";
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * "the area and circumference of", "the mean, median and mode for": the parts
 * a request lists, as nouns after "the" and before "of", "for" or "in" (so
 * "read the file and summarize it" lists nothing).
 */
const LISTED = /\bthe\s+(\p{L}{4,})((?:,\s*(?:the\s+)?\p{L}{4,})*),?\s+and\s+(?:the\s+|its\s+)?(\p{L}{4,})\s+(?:of|for|in)\b/giu;

/**
 * The parts a request asks for by listing them ("What are the area and
 * circumference of ..."): the words of each English "the A, B and C of"
 * list of the request, common words left out. Coverage without a model call
 * (docs/plan-and-solve.md#planning-comes-first-and-is-reviewed): a plan or an
 * answer that never mentions one of them leaves part of the request undone.
 */
export function listedParts(request: string): string[] {
  const parts = [...request.matchAll(LISTED)].flatMap((m) => [
    m[1] ?? "",
    ...(m[2] ?? "").split(",").map((w) => w.replace(/^\s*(?:the\s+)?/i, "")),
    m[3] ?? "",
  ]);
  return [...new Set(parts.map((p) => p.trim().toLowerCase()).filter((p) => p.length >= 4 && !COMMON.has(p) && !STOP.has(p)))];
}

/** Words that join or frame a list rather than name a part of the request. */
const STOP = new Set("both either neither each also only then there here when where what which about between".split(" "));

/** The listed parts of `request` that `text` never mentions (a plural or singular form counts). */
export function missingParts(request: string, text: string): string[] {
  const words = new Set((text.toLowerCase().match(/\p{L}+/gu) ?? []).flatMap(forms));
  return listedParts(request).filter((p) => !forms(p).some((f) => words.has(f)));
}

/** A word and what it is without a plural ending. */
function forms(word: string): string[] {
  return [word, word.replace(/s$/u, ""), word.replace(/es$/u, "")];
}
