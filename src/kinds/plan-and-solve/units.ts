/**
 * The units VERIFYING reads beside an answer's figures (docs/design/verification.md):
 * lengths with their factor to the metre, raised to a power for areas and
 * volumes; money and percent, which convert to nothing. English and Chinese
 * spellings. A conversion between two units of this table is exact.
 */

/** A unit as read: its length factor (metres per unit) and power (1 length, 2 area, 3 volume), or a kind that never converts. */
export type Unit = { text: string; kind: "length"; factor: number; power: number } | { text: string; kind: "money" | "percent" };

const LENGTHS: readonly [factor: number, names: string[]][] = [
  [0.001, ["mm", "millimeters?", "millimetres?", "毫米"]],
  [0.01, ["cm", "centimeters?", "centimetres?", "厘米"]],
  [1, ["m", "meters?", "metres?", "米"]],
  [1000, ["km", "kilometers?", "kilometres?", "千米", "公里"]],
  [0.0254, ["in", "inch", "inches"]],
  [0.3048, ["ft", "foot", "feet"]],
  [0.9144, ["yd", "yards?"]],
  [1609.344, ["mi", "miles?"]],
];

const POWER: Record<string, number> = { "²": 2, "2": 2, "³": 3, "3": 3 };

interface Pattern {
  re: RegExp;
  read: (m: RegExpExecArray) => Unit;
}

/** Longest spellings first, so "cm²" is not read as "cm" and "平方米" not as "米". */
const PATTERNS: Pattern[] = LENGTHS.flatMap(([factor, names]) => {
  const name = `(?:${names.join("|")})`;
  const length =
    (power: number) =>
    (m: RegExpExecArray): Unit => ({ text: m[0].trim(), kind: "length", factor, power });
  return [
    { re: new RegExp(`^\\s*(?:平方|sq\\.?\\s*|square\\s+)${name}(?![\\p{Script=Latin}\\d])`, "iu"), read: length(2) },
    { re: new RegExp(`^\\s*(?:立方|cu\\.?\\s*|cubic\\s+)${name}(?![\\p{Script=Latin}\\d])`, "iu"), read: length(3) },
    {
      re: new RegExp(`^\\s*${name}(?:\\^?([23])|([²³]))?(?![\\p{Script=Latin}\\d])`, "iu"),
      read: (m: RegExpExecArray): Unit => ({ text: m[0].trim(), kind: "length", factor, power: POWER[m[1] ?? m[2] ?? ""] ?? 1 }),
    },
  ];
}).sort((a, b) => b.re.source.length - a.re.source.length);

const MONEY_AFTER = /^\s*(?:dollars?|euros?|yuan|USD|EUR|CNY|元|美元|欧元)(?![\p{Script=Latin}\d])/iu;
const MONEY_BEFORE = /(?:[$€¥£]|USD|EUR|CNY)\s*$/u;
const PERCENT = /^\s*(?:%|percent|per\s*cent)(?![\p{L}\d])/iu;

/** The unit written right after (or, for a currency sign, right before) a figure; undefined when none is. */
export function unitAt(before: string, after: string): Unit | undefined {
  if (MONEY_BEFORE.test(before)) return { text: "$", kind: "money" };
  const percent = PERCENT.exec(after);
  if (percent) return { text: "%", kind: "percent" };
  const money = MONEY_AFTER.exec(after);
  if (money) return { text: money[0].trim(), kind: "money" };
  for (const p of PATTERNS) {
    const m = p.re.exec(after);
    // "in" is a unit only in a figure like "12 in" at the end of a phrase; "5 in total" is a preposition.
    if (m && !(/^\s*in$/i.test(m[0]) && /^\s*in\s+\p{L}/iu.test(after))) return p.read(m);
  }
  return undefined;
}

/** The factor that takes a figure in `from` to `to` (both lengths of the same power), or undefined when they do not convert. */
export function conversion(from: Unit, to: Unit): number | undefined {
  if (from.kind !== "length" || to.kind !== "length" || from.power !== to.power) return undefined;
  return (from.factor / to.factor) ** from.power;
}

/** Both units measure the same kind of quantity (a length and a length, an area and an area, money and money). */
export function sameDimension(a: Unit, b: Unit): boolean {
  if (a.kind === "length" && b.kind === "length") return a.power === b.power;
  return a.kind === b.kind;
}

/** Quantities named in questions, plans and answers, each as its English name, and the length power it is measured in (undefined: money). */
const QUANTITIES: Record<string, { name: string; power?: number }> = {
  ...words(2, "area", "surface", "面积"),
  ...words(1, "circumference", "周长"),
  ...words(1, "perimeter"),
  ...words(1, "length", "长度"),
  ...words(1, "radius", "半径"),
  ...words(1, "diameter", "直径"),
  ...words(1, "distance", "距离"),
  ...words(1, "height", "高度"),
  ...words(1, "width", "宽度"),
  ...words(3, "volume", "体积"),
  ...words(undefined, "subtotal", "小计"),
  ...words(undefined, "total", "总价", "总额", "合计"),
  ...words(undefined, "tax", "税", "税额", "税费"),
  ...words(undefined, "price", "单价", "价格"),
  ...words(undefined, "discount", "折扣"),
};

function words(power: number | undefined, name: string, ...others: string[]): Record<string, { name: string; power?: number }> {
  return Object.fromEntries([name, ...others].map((w) => [w, { name, ...(power !== undefined ? { power } : {}) }]));
}

/** The quantities a text names, in order, by their English names: whole words for letters, any occurrence for CJK ("面积为" names area). */
export function quantitiesIn(text: string): { name: string; at: number }[] {
  const found: { at: number; word: string }[] = [];
  for (const word of Object.keys(QUANTITIES)) {
    const re = /\p{Script=Han}/u.test(word) ? new RegExp(word, "gu") : new RegExp(`(?<![\\p{L}])${word}s?(?![\\p{L}])`, "giu");
    for (const m of text.matchAll(re)) found.push({ at: m.index ?? 0, word });
  }
  // 税额 also holds 税: the longer word at one place wins.
  return found
    .sort((a, b) => a.at - b.at || b.word.length - a.word.length)
    .filter((f, i, all) => !all.slice(0, i).some((g) => f.at >= g.at && f.at < g.at + g.word.length))
    .map((f) => ({ name: QUANTITIES[f.word]!.name, at: f.at }));
}

/** The length power a quantity is measured in, when it is a length-based one. */
export function powerOf(quantity: string): number | undefined {
  return QUANTITIES[quantity]?.power;
}
