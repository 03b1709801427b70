/**
 * The calculator's arithmetic (docs/calculator.md): a recursive-descent
 * evaluator over real numbers that computes as it parses. Every value along
 * the way must be a finite real number; anything else stops the evaluation
 * with a message the model can act on.
 *
 *   sum     = product (("+" | "-") product)*        a ± b% is a ± a·b/100
 *   product = factor (("*" | "/" | "%" | "mod") factor | factor)*
 *                                                   juxtaposition multiplies, at the level of * and /
 *   factor  = unary ["%"]                           a percentage when no operand follows the %
 *   unary   = ("+" | "-") unary | power
 *   power   = primary ["^" unary]                   right to left, above unary minus
 *   primary = number | constant | function "(" sum ("," sum)* ")" | "(" sum ")"
 */
import { RuntimeError } from "../../errors.js";

/** Brackets, function calls, signs and powers nest at most this deep: far past real use, far below the stack. */
const MAX_DEPTH = 100;

const CONSTANTS: ReadonlyMap<string, number> = new Map([
  ["pi", Math.PI],
  ["PI", Math.PI],
  ["e", Math.E],
  ["E", Math.E],
  ["tau", 2 * Math.PI],
]);

/** A function and how many arguments it takes. */
type MathFunction = { apply: (...args: number[]) => number; min: number; max: number };
const fn = (apply: (...args: number[]) => number, min: number, max = min): MathFunction => ({ apply, min, max });

/** Floored, as in mathematics (`-8 % 3` is 1); `x mod 0` is x. */
function mod(x: number, y: number): number {
  if (y === 0) return x;
  const r = x % y;
  return r !== 0 && r < 0 !== y < 0 ? r + y : r;
}

/**
 * round, floor, ceil and fix to a number of decimals. The scaled value is
 * taken to 15 significant digits first, so that a decimal as written wins over
 * its binary neighbour: `round(1.005, 2)` is 1.01 although 1.005 is stored as
 * 1.00499…, and `floor(2.9999999999999996)` is 3.
 */
function toDecimals(name: string, whole: (x: number) => number) {
  return (x: number, decimals = 0): number => {
    if (!Number.isInteger(decimals) || decimals < 0 || decimals > 15) throw fail(`decimals in function ${name} must be an integer from 0 to 15`);
    const scale = 10 ** decimals;
    // Past 2^53 a double has no fraction left to round.
    if (Math.abs(x * scale) >= 2 ** 53) return x;
    return whole(Number((x * scale).toPrecision(15))) / scale;
  };
}
const halfAwayFromZero = (x: number) => Math.sign(x) * Math.round(Math.abs(x));

const FUNCTIONS: ReadonlyMap<string, MathFunction> = new Map([
  ["sqrt", fn(Math.sqrt, 1)],
  ["cbrt", fn(Math.cbrt, 1)],
  ["abs", fn(Math.abs, 1)],
  ["sign", fn(Math.sign, 1)],
  ["round", fn(toDecimals("round", halfAwayFromZero), 1, 2)],
  ["floor", fn(toDecimals("floor", Math.floor), 1, 2)],
  ["ceil", fn(toDecimals("ceil", Math.ceil), 1, 2)],
  ["fix", fn(toDecimals("fix", Math.trunc), 1, 2)],
  ["min", fn(Math.min, 1, Infinity)],
  ["max", fn(Math.max, 1, Infinity)],
  ["pow", fn(Math.pow, 2)],
  ["mod", fn(mod, 2)],
  ["hypot", fn(Math.hypot, 1, Infinity)],
  ["exp", fn(Math.exp, 1)],
  ["log", fn((x, base) => (base === undefined ? Math.log(x) : Math.log(x) / Math.log(base)), 1, 2)],
  ["log10", fn(Math.log10, 1)],
  ["log2", fn(Math.log2, 1)],
  ["sin", fn(Math.sin, 1)],
  ["cos", fn(Math.cos, 1)],
  ["tan", fn(Math.tan, 1)],
  ["asin", fn(Math.asin, 1)],
  ["acos", fn(Math.acos, 1)],
  ["atan", fn(Math.atan, 1)],
  ["atan2", fn(Math.atan2, 2)],
  ["sinh", fn(Math.sinh, 1)],
  ["cosh", fn(Math.cosh, 1)],
  ["tanh", fn(Math.tanh, 1)],
]);

const BINARY: Record<string, (a: number, b: number) => number> = {
  "+": (a, b) => a + b,
  "-": (a, b) => a - b,
  "*": (a, b) => a * b,
  "/": (a, b) => a / b,
  "%": mod,
  "^": (a, b) => a ** b,
};

const fail = (message: string) => new RuntimeError("TOOL_FAILED", message);

/** Some text of the expression in a message: quoted, on one line, at most 60 characters. */
function quote(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
}

/** A number as results are given, to 14 significant digits. */
const format = (x: number) => String(Number(x.toPrecision(14)));

/** `at`: the offset in the expression. Characters outside the grammar are "op" tokens too. */
type Token = { kind: "number" | "name" | "op" | "end"; text: string; at: number };

const NUMBER = /(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/y;
const NAME = /[A-Za-z_]\w*/y;
const ends = (token: Token | undefined) => token !== undefined && (token.kind !== "op" || token.text === ")" || token.text === "%");

/**
 * The tokens of `text`. Blanks are any white space; `#` starts a comment. A
 * character outside the grammar is a token of its own, refused when the
 * parser reaches it, so that errors come in reading order. A line break after
 * a complete operand outside brackets would start a second expression: it
 * becomes a `;`, which is refused.
 */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let depth = 0;
  for (let at = 0; at < text.length; ) {
    const c = text[at]!;
    if (c === "#") {
      at = text.indexOf("\n", at);
      if (at < 0) break;
    } else if (c === "\n" && depth === 0 && ends(tokens[tokens.length - 1])) {
      tokens.push({ kind: "op", text: ";", at: at++ });
    } else if (/\s/.test(c)) {
      at++;
    } else {
      NUMBER.lastIndex = NAME.lastIndex = at;
      const number = NUMBER.exec(text)?.[0];
      const name = number === undefined ? NAME.exec(text)?.[0] : undefined;
      const token: Token = { kind: number !== undefined ? "number" : name !== undefined ? "name" : "op", text: number ?? name ?? c, at };
      tokens.push(token);
      at += token.text.length;
      if (c === "(") depth++;
      else if (c === ")") depth--;
    }
  }
  tokens.push({ kind: "end", text: "", at: text.length });
  return tokens;
}

/**
 * The value of `expression` to 14 significant digits (binary noise such as
 * 0.1 + 0.2 = 0.30000000000000004 hidden), or a RuntimeError("TOOL_FAILED")
 * whose one-line message says what to change.
 */
export function evaluate(expression: string): number {
  if (!expression.trim()) throw fail(`cannot parse ${quote(expression)}: the expression is empty`);
  // A line break at the end starts no second expression.
  const parser = new Parser(expression, tokenize(expression.trimEnd()));
  const value = parser.sum();
  if (parser.peek().kind !== "end") throw parser.unexpected(parser.peek());
  // + 0 turns -0 into 0.
  return Number(value.toPrecision(14)) + 0;
}

/** A recursive-descent parser that evaluates as it reads: sum → product → factor → unary → power → primary. */
class Parser {
  private i = 0;
  private depth = 0;

  constructor(
    private readonly expression: string,
    private readonly tokens: Token[],
  ) {}

  peek(): Token {
    return this.tokens[this.i]!;
  }

  unexpected(token: Token): RuntimeError {
    return this.syntax(
      token.kind === "end" ? "value expected" : token.text === ";" ? "several expressions not allowed" : `unexpected ${JSON.stringify(token.text)}`,
      token.at,
    );
  }

  sum(): number {
    let value = this.product().value;
    while (this.is("+") || this.is("-")) {
      const op = this.tokens[this.i++]!.text;
      const right = this.product();
      value = this.binary(value, op, right.percentage ? this.binary(value, "*", right.value) : right.value);
    }
    return value;
  }

  private product(): { value: number; percentage: boolean } {
    let { value, percentage } = this.factor();
    for (;;) {
      const token = this.peek();
      const explicit = (token.kind === "op" && "*/%".includes(token.text)) || (token.kind === "name" && token.text === "mod");
      // Juxtaposition multiplies (`2pi`, `2(3 + 4)`, `(1)2`), but two numbers in a row are a mistake.
      const implicit = !explicit && (token.kind === "name" || this.is("(") || (token.kind === "number" && this.tokens[this.i - 1]!.kind !== "number"));
      if (!explicit && !implicit) return { value, percentage };
      if (explicit) this.i++;
      const op = implicit ? "*" : token.text === "mod" ? "%" : token.text;
      value = this.binary(value, op, this.factor().value);
      percentage = false;
    }
  }

  private factor(): { value: number; percentage: boolean } {
    const value = this.unary();
    if (!this.is("%") || startsOperand(this.tokens[this.i + 1]!)) return { value, percentage: false };
    this.i++;
    return { value: value / 100, percentage: true };
  }

  private unary(): number {
    if (!this.is("-") && !this.is("+")) return this.power();
    const sign = this.tokens[this.i++]!.text;
    const value = this.nested(() => this.unary());
    return sign === "-" ? -value : value;
  }

  private power(): number {
    const base = this.primary();
    if (!this.is("^")) return base;
    this.i++;
    return this.binary(
      base,
      "^",
      this.nested(() => this.unary()),
    );
  }

  private primary(): number {
    const token = this.tokens[this.i++]!;
    if (token.kind === "number") return this.real(Number(token.text), () => token.text);
    if (token.kind === "name") return this.is("(") ? this.call(token.text) : constant(token.text);
    // An operator where an operand should be (`2 +* 3`, `(1 + )`) is a missing value, not a stray character.
    if (token.text !== "(") throw "*/%^),".includes(token.text) ? this.syntax("value expected", token.at) : this.unexpected(token);
    const value = this.nested(() => this.sum());
    this.close();
    return value;
  }

  private call(name: string): number {
    const f = FUNCTIONS.get(name);
    if (!f) throw fail(`function ${JSON.stringify(name)} is not allowed; allowed functions: ${[...FUNCTIONS.keys()].join(", ")}`);
    this.i++;
    const args: number[] = [];
    if (!this.is(")")) {
      for (;;) {
        args.push(this.nested(() => this.sum()));
        if (!this.is(",")) break;
        this.i++;
      }
    }
    this.close();
    if (args.length < f.min || args.length > f.max) {
      const wanted = f.max === Infinity ? `${f.min} or more` : f.max > f.min ? `${f.min} or ${f.max}` : String(f.min);
      throw fail(`function ${name} takes ${wanted} argument${f.max > 1 ? "s" : ""}, not ${args.length}`);
    }
    return this.real(f.apply(...args), () => `${name}(${args.map(format).join(", ")})`);
  }

  private is(op: string): boolean {
    const token = this.peek();
    return token.kind === "op" && token.text === op;
  }

  private syntax(reason: string, at: number): RuntimeError {
    return fail(`cannot parse ${quote(this.expression)}: ${reason} (char ${at + 1})`);
  }

  /** `value`, when it is a finite real number; `what` names the operation that gave it. */
  private real(value: number, what: () => string): number {
    if (Number.isNaN(value)) throw fail(`cannot evaluate ${quote(this.expression)}: ${what()} is not a real number`);
    if (!Number.isFinite(value)) throw fail(`cannot evaluate ${quote(this.expression)}: ${what()} is not finite (${value})`);
    return value;
  }

  private binary(a: number, op: string, b: number): number {
    if (op === "/" && b === 0) throw fail(`cannot evaluate ${quote(this.expression)}: division by zero`);
    return this.real(BINARY[op]!(a, b), () => `${format(a)} ${op} ${format(b)}`);
  }

  private nested<T>(parse: () => T): T {
    if (++this.depth > MAX_DEPTH) throw this.syntax(`nested more than ${MAX_DEPTH} deep`, this.peek().at);
    const value = parse();
    this.depth--;
    return value;
  }

  private close(): void {
    if (!this.is(")")) throw this.peek().kind === "end" ? this.syntax("parenthesis ) expected", this.peek().at) : this.unexpected(this.peek());
    this.i++;
  }
}

function startsOperand(token: Token): boolean {
  return token.kind === "number" || token.kind === "name" || (token.kind === "op" && "(+-".includes(token.text));
}

function constant(name: string): number {
  const value = CONSTANTS.get(name);
  if (value !== undefined) return value;
  if (FUNCTIONS.has(name)) throw fail(`function "${name}" needs its arguments in parentheses, e.g. ${name}(2)`);
  throw fail(`unknown symbol ${JSON.stringify(name)}; the constants are pi, e and tau`);
}
