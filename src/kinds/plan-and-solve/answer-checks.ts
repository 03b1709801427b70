/**
 * The exact checks of VERIFYING (docs/design/plan-and-solve-design.md diagram 1,
 * "Verify Calculations"; docs/design/verification.md): the provenance of each
 * figure of an answer. No model call; no guess.
 *
 * A figure is *traced* when it is a number a tool returned, written as
 * that number rounded to the figure's decimals (78.54 or 78.5 for
 * 78.5398…; "about 80" rounds to its last non-zero digit only when hedged),
 * "25π" when 25·π is one; in the question's unit, or in another unit of the
 * units table when a tool computed the conversion or the table makes it
 * exact (103.1 ft from 31.42 m). A figure the question states is *restated*
 * when written in a unit of the same quantity ("5 m", not "5 m²"). Every
 * other figure is a *finding*, and so is a traced one whose unit or label
 * belongs to another quantity than the result it came from (a swap, an area
 * in metres). Findings go back to the model as questions; they never refuse
 * an answer by themselves (work.ts).
 */
import { conversion, powerOf, quantitiesIn, sameDimension, type Unit, unitAt } from "./units.js";

/** One successful tool call, as VERIFYING sees it. */
export interface RecordedResult {
  tool: string;
  arguments: unknown;
  result: unknown;
  /** The todo item the call was attributed to, when there was one. */
  item?: string;
}

/** A figure as written in a text. */
export interface WrittenNumber {
  value: number;
  text: string;
  decimals: number;
  /** Where it starts and ends in the text. */
  at: number;
  end: number;
  unit?: Unit;
  /** Written as a multiple of π ("25π"). */
  pi: boolean;
}

/**
 * Digits with their decimals and thousands separators; beside CJK characters
 * too ("100平方米"), but not inside a Latin name ("Qwen3", "v2") nor as an
 * ordinal ("2nd").
 */
const NUMBER = /(?<![\p{Script=Latin}\p{N}_.,])[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?![\d]|(?:st|nd|rd|th)\b|,\d{3})/gu;
const PI_AFTER = /^\s*(?:π|pi\b)/iu;
/** Figures that count something in the text itself: "2 decimals", a list's "1." at a line's start. */
const NOT_A_FIGURE_AFTER = /^\s*(?:decimals?|decimal places|significant|digits|位小数)/iu;
const HEDGE = /(?:about|around|roughly|approximately|approx\.?|nearly|almost|some|~|≈|约|大约|大概|左右)\s*[$€¥£]?\s*$/iu;

/** The figures of a text, each with the unit written beside it. */
export function numbersIn(text: string): WrittenNumber[] {
  return [...text.matchAll(NUMBER)].flatMap((m) => {
    const at = m.index ?? 0;
    const end = at + m[0].length;
    const after = text.slice(end, end + 40);
    const lineStart = text.slice(0, at).split("\n").at(-1) ?? "";
    if (NOT_A_FIGURE_AFTER.test(after) || (/^\s*$/.test(lineStart) && /^[.)]\s/.test(after))) return [];
    const plain = m[0].replace(/,/g, "").replace("−", "-");
    const dot = plain.indexOf(".");
    const pi = PI_AFTER.exec(after);
    const unit = unitAt(text.slice(Math.max(0, at - 5), at), pi ? after.slice(pi[0].length) : after);
    return [{ value: Number(plain), text: m[0], decimals: dot < 0 ? 0 : plain.length - dot - 1, at, end, pi: pi !== null, ...(unit ? { unit } : {}) }];
  });
}

/** A number a tool returned, with the quantities its call names (its item's words, its string arguments'). */
interface Computed {
  value: number;
  from: RecordedResult;
  quantities: string[];
}

/** What in `answer` no tool result or question supports, one finding each; empty when every figure is traced. */
export function figureFindings(answer: string, question: string, recorded: readonly RecordedResult[]): string[] {
  const computed = recorded.flatMap((r) => {
    const quantities = quantitiesIn(`${r.item ?? ""} ${strings(r.arguments).join(" ")}`).map((q) => q.name);
    return resultNumbers(r.result, new Set(strings(r.arguments))).map((value) => ({ value, from: r, quantities }));
  });
  const asked = numbersIn(question);
  // The tools compute in the question's length unit (the radius in metres gives an area in m²).
  const base = asked.find((n) => n.unit?.kind === "length")?.unit;
  const findings: string[] = [];
  const seen = new Set<string>();
  const figures = numbersIn(answer);
  figures.forEach((figure, i) => {
    const key = `${figure.text}${figure.pi ? "π" : ""} ${figure.unit?.text ?? ""}`;
    if (seen.has(key)) return;
    seen.add(key);
    const label = labelOf(answer, figure, figures[i - 1]);
    const hedged = HEDGE.test(answer.slice(Math.max(0, figure.at - 20), figure.at));
    const finding = judge(figure, { label, hedged, computed, asked, base, called: recorded.length > 0 });
    if (finding) findings.push(finding);
  });
  return findings;
}

interface Judging {
  label: string | undefined;
  hedged: boolean;
  computed: readonly Computed[];
  asked: readonly WrittenNumber[];
  base: Unit | undefined;
  called: boolean;
}

/** One figure's finding, or undefined when it is traced or restated and its unit and label fit. */
function judge(figure: WrittenNumber, j: Judging): string | undefined {
  const shown = `${figure.text}${figure.pi ? "π" : ""}${figure.unit ? ` ${figure.unit.text}` : ""}`;
  // The factor from the tools' unit to the figure's: 1 when they are the same or the figure has no length unit.
  const factor =
    figure.unit && j.base?.kind === "length" && figure.unit.kind === "length" ? (conversion({ ...j.base, power: figure.unit.power }, figure.unit) ?? 1) : 1;
  const value = figure.pi ? figure.value * Math.PI : figure.value;
  const fits = (c: Computed, k: number) =>
    figure.pi
      ? Math.abs(value - c.value * k) <= 1e-6 * Math.max(1, Math.abs(c.value * k))
      : rounds(figure, c.value * k, j.hedged) || percentOf(figure, c.value);
  const converted = j.computed.filter((c) => fits(c, factor));
  if (converted.length > 0) return labelled(figure, shown, converted, j);
  const unconverted = factor !== 1 ? j.computed.filter((c) => fits(c, 1)) : [];
  if (unconverted.length > 0) {
    // A tool computed the conversion itself: another of its results times the table's factor is this one.
    if (unconverted.some((c) => j.computed.some((o) => o !== c && Math.abs(o.value * factor - c.value) <= 1e-3 * Math.abs(c.value)))) return undefined;
    const c = unconverted[0]!;
    return (
      `${shown}: ${figure.text} is what ${source(c.from)} returned, in ${j.base?.text}${power(figure.unit)} (the question's unit), not in ${figure.unit?.text}; ` +
      `in ${figure.unit?.text} it is ${round(c.value * factor)}. Convert it or correct the unit`
    );
  }
  if (!figure.pi && restated(figure, j.asked)) return undefined;
  return j.called
    ? `${shown} is not a result of any tool; compute it or correct it`
    : `${shown} is not a result of any tool (no tool was called); compute it with a tool or correct it`;
}

/** A traced figure whose unit or label names another quantity than the result it came from. */
function labelled(figure: WrittenNumber, shown: string, sources: readonly Computed[], j: Judging): string | undefined {
  const { label } = j;
  const labelPower = label ? powerOf(label) : undefined;
  const unitPower = figure.unit?.kind === "length" ? figure.unit.power : undefined;
  if (label && labelPower !== undefined && unitPower !== undefined && labelPower !== unitPower)
    return `${shown} is given as the ${label}, but the ${label} is ${measured(labelPower)} and ${figure.unit?.text} measures ${measured(unitPower)}; correct the unit or the figure`;
  const own = new Set(sources.flatMap((s) => s.quantities));
  if (label && own.size > 0 && !own.has(label)) {
    const other = j.computed.find((c) => c.quantities.includes(label) && !c.quantities.some((q) => own.has(q)));
    if (other)
      return (
        `${shown} is given as the ${label}, but ${figure.text} is the ${[...own].join("/")} (${source(sources[0]!.from)}); ` +
        `the ${label} is ${round(other.value)} (${source(other.from)}). Correct it`
      );
  }
  // With no label, the unit against the quantity the result was computed as.
  const ownPowers = [...own].map(powerOf).filter((p): p is number => p !== undefined);
  if (!label && unitPower !== undefined && ownPowers.length > 0 && ownPowers.length === own.size && !ownPowers.includes(unitPower))
    return `${shown}: ${figure.text} is the ${[...own].join("/")} (${source(sources[0]!.from)}), which is ${measured(ownPowers[0]!)}, not ${measured(unitPower)}; correct the unit`;
  return undefined;
}

/** The figure states one of the question's own numbers, in a unit of the same quantity (or without one). */
function restated(figure: WrittenNumber, asked: readonly WrittenNumber[]): boolean {
  return asked.some((q) => {
    if (!figure.unit || !q.unit) return q.value === figure.value;
    if (!sameDimension(figure.unit, q.unit)) return false;
    return rounds(figure, q.value * (conversion(q.unit, figure.unit) ?? 1), false);
  });
}

/**
 * `figure`, with its decimals, is `value` rounded (a hair of slack for binary
 * fractions); hedged ("about 80"), an integer is rounded to its last non-zero digit.
 */
function rounds(figure: WrittenNumber, value: number, hedged: boolean): boolean {
  const trailing = figure.decimals === 0 && hedged ? (/(0+)$/.exec(String(Math.abs(figure.value)))?.[1]?.length ?? 0) : 0;
  const step = trailing > 0 ? 10 ** trailing : 10 ** -figure.decimals;
  return Math.abs(figure.value - value) <= 0.5 * step + 1e-9 * Math.max(1, Math.abs(value));
}

/** "8%" for a tool's 0.08. */
function percentOf(figure: WrittenNumber, value: number): boolean {
  return figure.unit?.kind === "percent" && Math.abs(figure.value / 100 - value) <= 0.5 * 10 ** -(figure.decimals + 2) + 1e-12;
}

/**
 * The quantity a figure is given as: the last one named between the previous
 * figure (or the sentence's start) and it ("Area: ", "周长为"), but not one
 * that names the previous figure right after it ("8% tax = $64.77").
 */
function labelOf(text: string, figure: WrittenNumber, previous: WrittenNumber | undefined): string | undefined {
  const start = previous ? previous.end : 0;
  const before = text.slice(start, figure.at);
  const clause = Math.max(0, before.search(/[^.;!?\n。；！？]*$/u));
  const named = quantitiesIn(before).filter((q) => q.at >= clause);
  const unit = previous?.unit?.text ?? "";
  const trailing = (q: { at: number }) => {
    const gap = before.slice(0, q.at).trimStart();
    return previous !== undefined && clause === 0 && /^\s*$/.test(unit && gap.startsWith(unit) ? gap.slice(unit.length) : gap);
  };
  return named.filter((q) => !trailing(q)).at(-1)?.name;
}

/**
 * Every number of a tool's result: JSON numbers, and numbers written in its
 * strings, at most 1,000; not those of a string that echoes the call's
 * arguments (the calculator's `expression`: its 5 is an input, not a result).
 */
function resultNumbers(value: unknown, echoed: ReadonlySet<string>): number[] {
  const out: number[] = [];
  const stack: unknown[] = [value];
  while (stack.length > 0 && out.length < 1000) {
    const v = stack.pop();
    if (typeof v === "number" && Number.isFinite(v)) out.push(v);
    else if (typeof v === "string" && !echoed.has(v)) out.push(...numbersIn(v).map((n) => n.value));
    else if (Array.isArray(v)) stack.push(...v);
    else if (typeof v === "object" && v !== null) stack.push(...Object.values(v));
  }
  return out;
}

function strings(value: unknown): string[] {
  if (typeof value === "string") return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (typeof value === "object" && value !== null) return Object.values(value).flatMap(strings);
  return [];
}

function measured(power: number): string {
  return power === 1 ? "a length" : power === 2 ? "an area" : "a volume";
}

function power(unit: Unit | undefined): string {
  return unit?.kind === "length" && unit.power > 1 ? (unit.power === 2 ? "²" : "³") : "";
}

function round(value: number): string {
  return String(Math.round(value * 100) / 100);
}

function source(r: RecordedResult): string {
  const args = JSON.stringify(r.arguments) ?? "";
  return `${r.tool}(${args.length > 80 ? `${args.slice(0, 77)}...` : args})${r.item ? ` for "${r.item}"` : ""}`;
}

/**
 * "the area and circumference of", "the mean, median and mode for": the parts
 * a request lists, as nouns after "the" and before "of", "for" or "in".
 * validate_plan's cheap coverage hint for a plan
 * (docs/plan-and-solve.md#planning-comes-first-and-is-reviewed); an answer's
 * coverage, in any language, is the verifier model's to judge.
 */
const LISTED = /\bthe\s+(\p{L}{4,})((?:,\s*(?:the\s+)?\p{L}{4,})*),?\s+and\s+(?:the\s+|its\s+)?(\p{L}{4,})\s+(?:of|for|in)\b/giu;

/** Words that join or frame a list rather than name a part of the request. */
const STOP = new Set(
  "both either neither each also only then there here when where what which about between the and with from that this result results value values".split(" "),
);

/** The parts a request lists ("What are the area and circumference of ..."). */
export function listedParts(request: string): string[] {
  const parts = [...request.matchAll(LISTED)].flatMap((m) => [
    m[1] ?? "",
    ...(m[2] ?? "").split(",").map((w) => w.replace(/^\s*(?:the\s+)?/i, "")),
    m[3] ?? "",
  ]);
  return [...new Set(parts.map((p) => p.trim().toLowerCase()).filter((p) => p.length >= 4 && !STOP.has(p)))];
}

/** The listed parts of `request` that `text` never mentions (a plural or singular form counts). */
export function missingParts(request: string, text: string): string[] {
  const words = new Set((text.toLowerCase().match(/\p{L}+/gu) ?? []).flatMap(forms));
  return listedParts(request).filter((p) => !forms(p).some((f) => words.has(f)));
}

/** A word and what it is without a plural ending. */
function forms(word: string): string[] {
  return [word, word.replace(/s$/u, ""), word.replace(/es$/u, "")];
}
