/**
 * The cheap, deterministic check of VERIFYING (docs/design/plan-and-solve-design.md diagram 1,
 * "Verify Calculations"; docs/plan-and-solve.md#verifying): a number in the
 * answer that nothing recorded supports, and that sits near a number a tool
 * computed, is taken to contradict it ("100 m²" after the calculator said
 * 78.54). No model call; it costs a scan of the answer and the results.
 *
 * - *Computed*: the JSON numbers of successful tool results.
 * - *Supported*: a computed number, or any number written in a tool result,
 *   a tool's arguments, or the question; equal when the answer's number is
 *   the supporting one rounded to the answer's decimals (78.5 for 78.54).
 * - *Near*: within a factor of NEAR_FACTOR of some non-zero computed number.
 *   A number far from every computed one (a year, a count, "2 decimals") is
 *   not judged: the check looks for a misquoted result, not for every claim.
 */

/** One successful tool call, as VERIFYING sees it. */
export interface RecordedResult {
  tool: string;
  arguments: unknown;
  result: unknown;
}

/** How far (as a ratio) an unsupported number may be from a computed one and still be taken as a misquote of it. */
export const NEAR_FACTOR = 5;

/** What in `answer` contradicts the recorded results; empty when nothing does. */
export function numberProblems(answer: string, question: string, recorded: readonly RecordedResult[]): string[] {
  const computed = recorded.flatMap((r) => jsonNumbers(r.result).map((value) => ({ value, from: r })));
  if (computed.length === 0) return [];
  const support = [
    ...computed.map((c) => c.value),
    ...recorded.flatMap((r) => [...textNumbers(JSON.stringify(r.result) ?? ""), ...textNumbers(JSON.stringify(r.arguments) ?? "")]),
    ...textNumbers(question),
  ];
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const { value, text, decimals } of numbersIn(answer)) {
    if (seen.has(text)) continue;
    seen.add(text);
    if (support.some((s) => matches(value, decimals, s))) continue;
    const near = computed.filter((c) => c.value !== 0 && Math.sign(c.value) === Math.sign(value) && ratio(value, c.value) <= NEAR_FACTOR);
    if (near.length === 0) continue;
    const closest = near.reduce((a, b) => (Math.abs(b.value - value) < Math.abs(a.value - value) ? b : a));
    problems.push(`the answer says ${text}, but no tool result supports it: ${closest.from.tool}(${brief(closest.from.arguments)}) returned ${closest.value}`);
  }
  return problems;
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

/** The numbers written in a text, with their decimals ("1,234.5" is 1234.5; "Qwen3" and "v2" are not numbers). */
export function numbersIn(text: string): Array<{ value: number; text: string; decimals: number }> {
  return [...text.matchAll(NUMBER)].map((m) => {
    const written = m[0];
    const plain = written.replace(/,/g, "").replace("−", "-");
    const dot = plain.indexOf(".");
    return { value: Number(plain), text: written, decimals: dot < 0 ? 0 : plain.length - dot - 1 };
  });
}

function textNumbers(text: string): number[] {
  return numbersIn(text).map((n) => n.value);
}

/** `value`, written with `decimals` decimals, is `supported` rounded (a hair of slack for binary fractions). */
function matches(value: number, decimals: number, supported: number): boolean {
  const tolerance = 0.5 * 10 ** -decimals + 1e-9 * Math.max(1, Math.abs(supported));
  return Math.abs(value - supported) <= tolerance;
}

function ratio(a: number, b: number): number {
  const [x, y] = [Math.abs(a), Math.abs(b)];
  return Math.max(x, y) / Math.max(Math.min(x, y), Number.MIN_VALUE);
}

function brief(args: unknown): string {
  const text = JSON.stringify(args) ?? "";
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
