/**
 * The calculator's arithmetic (docs/team-file.md#the-calculator): real numbers,
 * `+ - * / ^ %` and `mod`, parentheses, the constants pi, e and tau, and a
 * fixed set of functions. Nothing else parses or evaluates: no symbols to
 * assign, no properties to reach, no strings, no `eval`.
 *
 * The grammar and the number semantics are mathjs's (15), carried over for
 * this subset so expressions mean what they meant when the calculator ran on
 * mathjs: its precedence (`-2^2` is -4, `2^3^2` is 512), implicit
 * multiplication (`2pi`, `2(3 + 4)`) with its "rule 2" (`1/2pi` is
 * (1/2)·pi), percentages (`50%`, `100 + 10%`), floored `mod`, decimal
 * rounding and its round-off correction in round/floor/ceil. Where mathjs
 * would go complex (`sqrt(-1)`) the calculator refuses, as it did.
 * test/tools/arithmetic.test.ts compares the two on generated expressions.
 * Loading mathjs cost a run ~200 ms (docs/performance.md).
 */

/** A refused construct: said to the model as it is, without "cannot parse". */
export class Refused extends Error {}

interface Token {
  kind: "number" | "symbol" | "delimiter" | "string" | "end";
  text: string;
  at: number;
}

type Node =
  | { type: "number"; value: number }
  | { type: "symbol"; name: string }
  | { type: "call"; name: string; args: Node[] }
  | { type: "operator"; op: string; fn: Operator; args: Node[]; percentage?: boolean }
  | { type: "parenthesis"; content: Node }
  /** A string, matrix or object: parsed, and refused by `check` in mathjs's order (outer names first). */
  | { type: "refused"; message: string };

type Operator = "add" | "subtract" | "multiply" | "divide" | "mod" | "pow" | "unaryMinus" | "unaryPlus";

const DELIMITERS = [
  ">>>", "<<", ">>", "==", "!=", "<=", ">=", ".*", "./", ".^", "??", "^|",
  ",", "(", ")", "[", "]", "{", "}", ";", "+", "-", "*", "/", "%", "^", "~", "!", "&", "|", "=", ":", "?", "<", ">", "'", ".",
];
const NAMED_DELIMITERS = new Set(["mod", "to", "in", "and", "xor", "or", "not"]);
const NOT_NUMBERS = new Set(["true", "false", "null", "undefined"]);
const COMPARISONS = new Set(["==", "!=", "<", ">", "<=", ">="]);
/** Operators the grammar knows and the calculator refuses, wherever they stand. */
const REFUSED_OPERATORS = new Set([
  ".*", "./", ".^", "??", "!", "'", "~", "not", "and", "or", "xor", "&", "|", "^|", "<<", ">>", ">>>", "to", "in",
]);

export const CONSTANTS: ReadonlyMap<string, number> = new Map([
  ["pi", Math.PI], ["PI", Math.PI], ["e", Math.E], ["E", Math.E], ["tau", 2 * Math.PI],
]);

/** Deeper brackets are refused: parsing recurses through ten functions a level. */
const MAX_NESTING = 100;
/** Deeper operands (brackets, signs, powers: `---1`, `2^2^2`) are refused, well within the stack. */
const MAX_DEPTH = 250;

// mathjs's default tolerances, used by its round-off corrections.
const REL_TOL = 1e-12;
const ABS_TOL = 1e-15;

/** Thrown where mathjs would have made a complex number, saying which operation left the reals. */
class NotReal extends Error {}

function tokenize(source: string): Token[] {
  const tokens: Token[] = [];
  let nesting = 0;
  let i = 0;
  const operandEnded = () => {
    const last = tokens[tokens.length - 1];
    return !!last && (last.kind === "number" || last.kind === "symbol" || last.kind === "string" || [")", "]", "}", "'"].includes(last.text));
  };
  while (i < source.length) {
    const c = source[i]!;
    if (c === " " || c === "\t" || c === "\u00a0" || c === "\r" || (c === "\n" && nesting > 0)) {
      i++;
    } else if (c === "#") {
      while (i < source.length && source[i] !== "\n") i++;
    } else if (c === "\n") {
      tokens.push({ kind: "delimiter", text: "\n", at: i++ });
    } else if (c === '"' || (c === "'" && !operandEnded())) {
      const end = source.indexOf(c, i + 1);
      if (end < 0) throw syntax(`End of string ${c} missing`, source.length);
      tokens.push({ kind: "string", text: source.slice(i + 1, end), at: i });
      i = end + 1;
    } else if (isDigit(c) || (c === "." && isDigit(source[i + 1]))) {
      if (/^0[xbo]/i.test(source.slice(i, i + 2))) throw new Refused("hexadecimal, binary and octal numbers are not allowed; write the decimal value");
      const end = numberEnd(source, i);
      const text = source.slice(i, end);
      if (text.includes(".") && /^\.[0-9]/.test(source.slice(end))) throw syntax(`Unexpected part ${quote(source.slice(end))}`, end);
      tokens.push({ kind: "number", text, at: i });
      i += text.length;
    } else if (isNameStart(c)) {
      let end = i + 1;
      while (end < source.length && isNamePart(source[end]!)) end++;
      const name = source.slice(i, end);
      tokens.push({ kind: NAMED_DELIMITERS.has(name) ? "delimiter" : "symbol", text: name, at: i });
      i += name.length;
    } else {
      const text = DELIMITERS.find((d) => source.startsWith(d, i));
      if (!text) throw syntax(unknownCharacter(source.codePointAt(i)!), i);
      if (text === "(" || text === "[" || text === "{") {
        if (++nesting > MAX_NESTING) throw new Refused(`brackets nested more than ${MAX_NESTING} deep`);
      }
      if ((text === ")" || text === "]" || text === "}") && nesting > 0) nesting--;
      tokens.push({ kind: "delimiter", text, at: i });
      i += text.length;
    }
  }
  tokens.push({ kind: "end", text: "", at: source.length });
  return tokens;
}

// Names are letters (any script, so that a look-alike is named in its refusal), digits, _ and $.
// ASCII is tested first: a Unicode property regex costs milliseconds to compile on first use.
const isNameStart = (c: string) =>
  (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c === "_" || c === "$" || (c > "\x7f" && /\p{L}/u.test(c));
const isNamePart = (c: string) => isNameStart(c) || isDigit(c) || (c > "\x7f" && /\p{N}/u.test(c));

const isDigit = (c: string | undefined) => c !== undefined && c >= "0" && c <= "9";

/** A dot that is a decimal mark, not the start of `./`, `.*` or `.^`. */
function isDecimalMark(source: string, at: number): boolean {
  const after = source[at + 1];
  return source[at] === "." && after !== "/" && after !== "*" && after !== "^";
}

/**
 * Where the number starting at `start` ends, as mathjs reads it: a dot
 * before `* / ^` is the element-wise operator's (`2./3`), `2e` is 2·e, and an
 * exponent sign needs digits (`2e+` does not parse).
 */
function numberEnd(source: string, start: number): number {
  let j = start;
  if (source[j] === ".") j++;
  else {
    while (isDigit(source[j])) j++;
    if (isDecimalMark(source, j)) j++;
  }
  while (isDigit(source[j])) j++;
  if (source[j] !== "e" && source[j] !== "E") return j;
  if (isDigit(source[j + 1]) || source[j + 1] === "+" || source[j + 1] === "-") {
    j++;
    if (source[j] === "+" || source[j] === "-") j++;
    if (!isDigit(source[j])) throw syntax(`Digit expected, got "${source[j] ?? ""}"`, j);
    while (isDigit(source[j])) j++;
    if (isDecimalMark(source, j)) throw syntax(`Digit expected, got "."`, j);
  } else if (isDecimalMark(source, j + 1)) {
    throw syntax(`Digit expected, got "."`, j + 1); // "2e.5"
  }
  return j;
}

/** Characters models write for arithmetic that is spelt otherwise here. */
const SPELLINGS: Record<string, string> = {
  "×": "*", "·": "*", "÷": "/", "−": "-", "–": "-", "²": "^2", "³": "^3", "√": "sqrt(…)", "π": "pi", "°": "* pi / 180",
};

function unknownCharacter(code: number): string {
  const c = String.fromCodePoint(code);
  const name = code > 0x7e || code < 0x20 ? `${JSON.stringify(c)} (U+${code.toString(16).toUpperCase().padStart(4, "0")})` : JSON.stringify(c);
  const spelling = SPELLINGS[c];
  return `character ${name} is not allowed${spelling ? `; write ${spelling}` : ""}`;
}

/** Some text of the expression in a message: quoted, on one line, at most 60 characters. */
function quote(text: string): string {
  return JSON.stringify(text.length > 60 ? `${text.slice(0, 57)}...` : text);
}

function syntax(message: string, at: number): SyntaxError {
  return new SyntaxError(`${message} (char ${at + 1})`);
}

const operator = (op: string, fn: Operator, args: Node[], percentage?: boolean): Node =>
  percentage ? { type: "operator", op, fn, args, percentage } : { type: "operator", op, fn, args };

/** mathjs's "rule 2" operand: a number, or a signed number. */
const rule2Node = (node: Node): boolean =>
  node.type === "number" || (node.type === "operator" && node.args.length === 1 && node.args[0]!.type === "number");

/** Recursive descent in mathjs's order (lib/esm/expression/parse.js), for the calculator's subset. */
class Parser {
  private i = 0;
  private depth = 0;
  /** How many function calls' arguments we are in: a "," outside any is no argument separator. */
  private depthOfCall = 0;
  private readonly unaries = new Map<number, { node: Node; end: number } | { error: unknown }>();

  constructor(private readonly tokens: Token[]) {}

  private get token(): Token {
    return this.tokens[this.i]!;
  }

  private is(text: string): boolean {
    return this.token.kind === "delimiter" && this.token.text === text;
  }

  private nextSkipNewline(): void {
    this.i++;
    while (this.is("\n")) this.i++;
  }

  parseStart(): Node {
    const node = this.parseExpression();
    if (this.token.kind !== "end") throw this.unexpected();
    return node;
  }

  /** An expression where mathjs would parse an assignment: everything above add/subtract is refused. */
  private parseExpression(): Node {
    const node = this.parseAddSubtract();
    const { text, kind } = this.token;
    if (kind !== "delimiter") return node;
    if (text === "=") throw new Refused(`${node.type === "call" ? "function definitions" : "assignments"} not allowed in a calculator expression`);
    if (text === "?") throw new Refused("conditionals not allowed in a calculator expression");
    if (text === ":") throw new Refused("ranges not allowed in a calculator expression");
    if (text === ";" || text === "\n") throw new Refused("several expressions not allowed in a calculator expression");
    if (COMPARISONS.has(text)) {
      this.nextSkipNewline();
      this.parseAddSubtract();
      if (COMPARISONS.has(this.token.text) && this.token.kind === "delimiter") {
        throw new Refused("comparisons not allowed in a calculator expression");
      }
      throw refusedOperator(text);
    }
    if (REFUSED_OPERATORS.has(text)) throw refusedOperator(text);
    return node;
  }

  private parseAddSubtract(): Node {
    let node = this.parseMultiplyDivide();
    while (this.is("+") || this.is("-")) {
      const op = this.token.text;
      this.nextSkipNewline();
      const right = this.parseMultiplyDivide();
      // mathjs: "a + b%" is a + a·b/100.
      const args = right.type === "operator" && right.percentage ? [node, operator("*", "multiply", [node, right])] : [node, right];
      node = operator(op, op === "+" ? "add" : "subtract", args);
    }
    return node;
  }

  private parseMultiplyDivide(): Node {
    let node = this.parseImplicitMultiplication();
    for (;;) {
      const op = this.token.text;
      const fn = this.token.kind !== "delimiter" ? undefined : op === "*" ? "multiply" : op === "/" ? "divide" : op === "%" || op === "mod" ? "mod" : undefined;
      if (!fn) return node;
      this.nextSkipNewline();
      node = operator(op, fn, [node, this.parseImplicitMultiplication()]);
    }
  }

  /** `2pi`, `(1 + 2)3`, `2(3 + 4)`, `pi e`. */
  private parseImplicitMultiplication(): Node {
    let node = this.parseRule2();
    let last = node;
    for (;;) {
      const { kind } = this.token;
      if (kind === "symbol" || (kind === "number" && last.type !== "number" && last.type !== "operator") || this.is("(")) {
        last = this.parseRule2();
        node = operator(" ", "multiply", [node, last]);
      } else {
        return node;
      }
    }
  }

  /** mathjs's rule 2: in "number / number symbol" the division goes first, `1/2pi` = (1/2)·pi. */
  private parseRule2(): Node {
    let node = this.parsePercentage();
    let last = node;
    while (this.is("/") && rule2Node(last)) {
      const atSlash = this.i;
      this.nextSkipNewline();
      if (this.token.kind !== "number") {
        this.i = atSlash;
        break;
      }
      const atNumber = this.i;
      this.nextSkipNewline();
      const after: Token = this.token;
      if (after.kind !== "symbol" && !this.is("(")) {
        this.i = atSlash;
        break;
      }
      this.i = atNumber;
      last = this.parsePercentage();
      node = operator("/", "divide", [node, last]);
    }
    return node;
  }

  /** `50%` is 0.5 unless an operand follows the `%`, which makes it `mod`. */
  private parsePercentage(): Node {
    let node = this.parseUnary();
    if (this.is("%")) {
      const atPercent = this.i;
      this.nextSkipNewline();
      const afterPercent = this.i;
      if (!this.startsOperand()) {
        this.i = afterPercent;
        return operator("%", "divide", [node, { type: "number", value: 100 }], true);
      }
      try {
        this.parseUnary();
        this.i = atPercent;
      } catch {
        this.i = afterPercent;
        node = operator("%", "divide", [node, { type: "number", value: 100 }], true);
      }
    }
    return node;
  }

  /**
   * parseUnary from the current token, remembered by position: the
   * percentage look-ahead parses what follows a `%` and then parses it again,
   * which nested as `1%(1%(1%(…)))` took time doubling with each level.
   */
  /** Whether the current token can begin an operand (what parseUnary would try). */
  private startsOperand(): boolean {
    const { kind, text } = this.token;
    if (kind === "number" || kind === "symbol" || kind === "string") return true;
    return kind === "delimiter" && (NAMED_DELIMITERS.has(text) || ["(", "[", "{", "-", "+", "~"].includes(text));
  }

  private parseUnary(): Node {
    if (++this.depth > MAX_DEPTH) throw new Refused(`expression nested more than ${MAX_DEPTH} levels deep`);
    try {
      return this.parseUnaryRemembered();
    } finally {
      this.depth--;
    }
  }

  private parseUnaryRemembered(): Node {
    const start = this.i;
    const known = this.unaries.get(start);
    if (known) {
      if ("error" in known) throw known.error;
      this.i = known.end;
      return known.node;
    }
    try {
      const node = this.parseUnaryOnce();
      this.unaries.set(start, { node, end: this.i });
      return node;
    } catch (error) {
      this.unaries.set(start, { error });
      throw error;
    }
  }

  private parseUnaryOnce(): Node {
    if (this.is("-") || this.is("+")) {
      const op = this.token.text;
      this.nextSkipNewline();
      return operator(op, op === "-" ? "unaryMinus" : "unaryPlus", [this.parseUnary()]);
    }
    if (this.is("~") || this.is("not")) throw refusedOperator(this.token.text);
    return this.parsePow();
  }

  /** Right-associative, and above unary minus: `-2^2` = -4, `2^-1` = 0.5. */
  private parsePow(): Node {
    const node = this.parseOperand();
    if (this.is("!") || this.is("'") || this.is("??")) throw refusedOperator(this.token.text);
    if (!this.is("^")) return node;
    this.nextSkipNewline();
    return operator("^", "pow", [node, this.parseUnary()]);
  }

  private parseOperand(): Node {
    const token = this.token;
    if (token.kind === "number") {
      this.i++;
      return { type: "number", value: Number(token.text) };
    }
    // mathjs reads a named operator where an operand stands as a name: mod(7, 3).
    if (token.kind === "symbol" || (token.kind === "delimiter" && NAMED_DELIMITERS.has(token.text))) {
      this.i++;
      // mathjs's literals: Infinity and NaN are numbers (and end in "is not finite"), the others are not.
      if (token.text === "Infinity" || token.text === "NaN") return this.refuseAccessors({ type: "number", value: Number(token.text) });
      if (NOT_NUMBERS.has(token.text)) {
        return this.refuseAccessors({ type: "refused", message: `only numbers are allowed, not ${token.text}` });
      }
      if (!this.is("(")) return this.refuseAccessors({ type: "symbol", name: token.text });
      return this.refuseAccessors({ type: "call", name: token.text, args: this.parseArguments() });
    }
    if (token.kind === "string") {
      this.i++;
      return this.refuseAccessors({ type: "refused", message: `only numbers are allowed, not ${JSON.stringify(token.text)}` });
    }
    if (this.is("[") || this.is("{")) {
      const what = token.text === "[" ? "matrices" : "objects";
      this.skipBalanced();
      return this.refuseAccessors({ type: "refused", message: `${what} not allowed in a calculator expression` });
    }
    if (this.is("(")) {
      this.i++;
      const content = this.parseExpression();
      if (!this.is(")")) throw syntax("Parenthesis ) expected", this.token.at);
      this.i++;
      return this.refuseAccessors({ type: "parenthesis", content });
    }
    throw this.unexpected();
  }

  private parseArguments(): Node[] {
    this.i++; // (
    this.depthOfCall++;
    try {
      return this.parseArgumentList();
    } finally {
      this.depthOfCall--;
    }
  }

  private parseArgumentList(): Node[] {
    const args: Node[] = [];
    if (!this.is(")")) {
      args.push(this.parseExpression());
      while (this.is(",")) {
        this.i++;
        args.push(this.parseExpression());
      }
    }
    if (!this.is(")")) throw syntax("Parenthesis ) expected", this.token.at);
    this.i++;
    return args;
  }

  /** Past a bracketed matrix or object, whatever it holds. */
  private skipBalanced(): void {
    let depth = 0;
    do {
      const { kind, text, at } = this.token;
      if (kind === "end") throw syntax("Closing bracket expected", at);
      if (kind === "delimiter" && (text === "(" || text === "[" || text === "{")) depth++;
      if (kind === "delimiter" && (text === ")" || text === "]" || text === "}")) depth--;
      this.i++;
    } while (depth > 0);
  }

  private refuseAccessors(node: Node): Node {
    if (this.is("[")) throw new Refused("indexing not allowed in a calculator expression");
    if (this.is(".")) throw new Refused("property access not allowed in a calculator expression");
    return node;
  }

  /** What stands where it cannot: a refused construct by name, or a syntax error. */
  private unexpected(): Error {
    const { kind, text, at } = this.token;
    if (kind === "end") return syntax("Unexpected end of expression", at);
    if (kind === "delimiter") {
      if (text === "[") return new Refused("matrices not allowed in a calculator expression");
      if (text === "{") return new Refused("objects not allowed in a calculator expression");
      if (REFUSED_OPERATORS.has(text)) return refusedOperator(text);
      if (text === "," && this.depthOfCall === 0) return syntax(`Unexpected ","; write numbers without thousands separators, e.g. 1000`, at);
      if (text === "*" && this.tokens[this.i - 1]?.text === "*") return syntax(`Unexpected "*"; write powers with ^, e.g. 2^3`, at);
      return syntax(`Value expected, got ${JSON.stringify(text)}`, at);
    }
    return syntax(`Unexpected part ${quote(text)}`, at);
  }
}

function refusedOperator(op: string): Refused {
  return new Refused(`operator "${op}" is not allowed; use + - * / ^ %`);
}

export interface FunctionSpec {
  /** Fewest and most arguments. */
  arity: [number, number];
  apply: (...args: number[]) => number;
}

function nearlyEqual(a: number, b: number): boolean {
  if (Number.isNaN(a) || Number.isNaN(b)) return false;
  if (!Number.isFinite(a) || !Number.isFinite(b)) return a === b;
  if (a === b) return true;
  return Math.abs(a - b) <= Math.max(REL_TOL * Math.max(Math.abs(a), Math.abs(b)), ABS_TOL);
}

const larger = (x: number, y: number) => x > y && !nearlyEqual(x, y);
const smaller = (x: number, y: number) => x < y && !nearlyEqual(x, y);

/**
 * Rounds through the number's shortest decimal form, half away from zero, as
 * mathjs's `toFixed` does (`round(1.005, 2)` is 1.01, not 1.00).
 */
function roundDecimal(value: number, decimals: number): number {
  decimalsOf("round", decimals);
  if (!Number.isFinite(value)) return value;
  const match = /^(-?)(\d+\.?\d*)(e([+-]?\d+))?$/.exec(String(value).toLowerCase())!;
  const [, sign, digits] = match as unknown as [string, string, string];
  let exponent = Number(match[4] ?? 0);
  const dot = digits.indexOf(".");
  exponent += dot !== -1 ? dot - 1 : digits.length - 1;
  const stripped = digits.replace(".", "");
  const leading = /^0*/.exec(stripped)![0].length;
  exponent -= leading;
  const coefficients = stripped.slice(leading).replace(/0*$/, "").split("").map(Number);
  if (coefficients.length === 0) {
    coefficients.push(0);
    exponent++;
  }
  let precision = exponent + 1 + decimals;
  while (precision <= 0) {
    coefficients.unshift(0);
    exponent++;
    precision++;
  }
  if (coefficients.length > precision) {
    const removed = coefficients.splice(precision);
    if (removed[0]! >= 5) {
      let i = precision - 1;
      coefficients[i]!++;
      while (coefficients[i] === 10) {
        coefficients.pop();
        if (i === 0) {
          coefficients.unshift(0);
          exponent++;
          i++;
        }
        i--;
        coefficients[i]!++;
      }
    }
  }
  // The digits now stand for 0.d1d2… × 10^(exponent + 1).
  return Number(`${sign}0.${coefficients.join("")}e${exponent + 1}`);
}

/** mathjs's round: first to 12 decimals when that is within round-off of x. */
function round(x: number, decimals?: number): number {
  if (decimals !== undefined) decimalsOf("round", decimals);
  const epsilonExponent = 12; // |exponent of REL_TOL|
  if (decimals !== undefined && decimals >= epsilonExponent) return roundDecimal(x, decimals);
  const xEpsilon = roundDecimal(x, epsilonExponent);
  return roundDecimal(nearlyEqual(x, xEpsilon) ? xEpsilon : x, decimals ?? 0);
}

function decimalsOf(name: string, n: number): number {
  if (!Number.isInteger(n) || n < 0 || n > 15) {
    throw new Refused(`the number of decimals in ${name}(x, n) must be an integer from 0 to 15, not ${n}`);
  }
  return n;
}

/**
 * mathjs's floor (`Math.floor`) or ceil (`Math.ceil`), which return the
 * nearest integer instead when x is within round-off of it; `decimals`
 * shifts the point first. `name` is the function the expression called.
 */
function toward(direction: (x: number) => number, name: string) {
  const integer = (x: number): number => {
    const d = direction(x);
    const r = round(x);
    if (d === r) return d;
    return nearlyEqual(x, r) && !nearlyEqual(x, d) ? r : d;
  };
  return (x: number, decimals?: number): number => {
    if (decimals === undefined) return integer(x);
    const shift = 10 ** decimalsOf(name, decimals);
    return integer(x * shift) / shift;
  };
}

const floor = toward(Math.floor, "floor");
const ceil = toward(Math.ceil, "ceil");
const fixDown = toward(Math.floor, "fix");
const fixUp = toward(Math.ceil, "fix");

/** Floored modulo: the sign of the divisor, `mod(x, 0)` = x. */
function mod(x: number, y: number): number {
  return y === 0 ? x : x - y * floor(x / y);
}

/** x^y, refused where it is not real: a negative base to a fractional power. */
function pow(x: number, y: number): number {
  if ((x * x < 1 && y === Infinity) || (x * x > 1 && y === -Infinity)) return 0;
  if (Number.isInteger(y) || x >= 0 || Number.isNaN(x) || Number.isNaN(y)) return Math.pow(x, y);
  throw new NotReal(`${x}^${y} is a negative number to a fractional power${Math.abs(y * 3 - 1) < 1e-9 ? "; for a cube root use cbrt" : ""}`);
}

/** A real result for x in its domain, refused where mathjs's would be complex. */
const realOn = (name: string, inDomain: (x: number) => boolean, domain: string, f: (x: number) => number) => (x: number) => {
  if (!inDomain(x) && !Number.isNaN(x)) throw new NotReal(`${name}(${x}) is not real: ${name} takes ${domain}`);
  return f(x);
};
const nonNegative = (x: number) => x >= 0;
const unit = (x: number) => x >= -1 && x <= 1;
const log = realOn("log", nonNegative, "numbers >= 0", Math.log);

function extreme(name: string, pick: (a: number, b: number) => boolean) {
  return (...values: number[]) => {
    let result: number | undefined;
    for (const v of values) if (Number.isNaN(v) || result === undefined || pick(v, result)) result = v;
    if (result === undefined) throw new Error(`Cannot calculate ${name} of an empty array`);
    return result;
  };
}

function hypot(...values: number[]): number {
  let result = 0;
  let largest = 0;
  for (const v of values) {
    const value = Math.abs(v);
    if (smaller(largest, value)) {
      result = result * (largest / value) * (largest / value) + 1;
      largest = value;
    } else {
      // mathjs's isPositive: within round-off of 0 is not positive.
      result += value > 0 && !nearlyEqual(value, 0) ? (value / largest) * (value / largest) : value;
    }
  }
  return largest * Math.sqrt(result);
}

const one = (apply: (x: number) => number): FunctionSpec => ({ arity: [1, 1], apply });
const INFINITE = Number.POSITIVE_INFINITY;

/** The functions an expression may call (the tool's description names them). */
export const FUNCTIONS: ReadonlyMap<string, FunctionSpec> = new Map<string, FunctionSpec>([
  ["sqrt", one(realOn("sqrt", nonNegative, "numbers >= 0", Math.sqrt))],
  ["cbrt", one(Math.cbrt)],
  ["abs", one(Math.abs)],
  ["sign", one(Math.sign)],
  ["round", { arity: [1, 2], apply: (x, n) => round(x, n) }],
  ["floor", { arity: [1, 2], apply: (x, n) => floor(x, n) }],
  ["ceil", { arity: [1, 2], apply: (x, n) => ceil(x, n) }],
  ["fix", { arity: [1, 2], apply: (x, n) => (x > 0 ? fixDown(x, n) : fixUp(x, n)) }],
  ["min", { arity: [1, INFINITE], apply: extreme("min", smaller) }],
  ["max", { arity: [1, INFINITE], apply: extreme("max", larger) }],
  ["pow", { arity: [2, 2], apply: pow }],
  ["mod", { arity: [2, 2], apply: mod }],
  ["hypot", { arity: [1, INFINITE], apply: hypot }],
  ["exp", one(Math.exp)],
  ["log", { arity: [1, 2], apply: (x, base) => (base === undefined ? log(x) : log(x) / log(base)) }],
  ["log10", one(realOn("log10", nonNegative, "numbers >= 0", Math.log10))],
  ["log2", one(realOn("log2", nonNegative, "numbers >= 0", Math.log2))],
  ["sin", one(Math.sin)],
  ["cos", one(Math.cos)],
  ["tan", one(Math.tan)],
  ["asin", one(realOn("asin", unit, "numbers from -1 to 1", Math.asin))],
  ["acos", one(realOn("acos", unit, "numbers from -1 to 1", Math.acos))],
  ["atan", one(Math.atan)],
  ["atan2", { arity: [2, 2], apply: Math.atan2 }],
  ["sinh", one(Math.sinh)],
  ["cosh", one(Math.cosh)],
  ["tanh", one(Math.tanh)],
]);

/** Look-alike letters (Cyrillic ѕ for s) make a refused name read like an allowed one: say so. */
const nonAscii = (name: string) => (/[^\x20-\x7e]/.test(name) ? " (it has non-ASCII letters)" : "");

/** Every name an expression uses must be a constant or an allowed function: checked before anything is computed. */
function check(node: Node): void {
  switch (node.type) {
    case "number":
      return;
    case "symbol":
      if (!CONSTANTS.has(node.name)) {
        throw new Refused(
          FUNCTIONS.has(node.name)
            ? `function "${node.name}" needs its arguments in parentheses, e.g. ${node.name}(2)`
            : `unknown symbol ${JSON.stringify(node.name)}${nonAscii(node.name)}; the constants are pi, e and tau`,
        );
      }
      return;
    case "call":
      if (!FUNCTIONS.has(node.name)) {
        throw new Refused(`function ${JSON.stringify(node.name)}${nonAscii(node.name)} is not allowed; allowed functions: ${[...FUNCTIONS.keys()].join(", ")}`);
      }
      node.args.forEach(check);
      return;
    case "operator":
      node.args.forEach(check);
      return;
    case "parenthesis":
      check(node.content);
      return;
    case "refused":
      throw new Refused(node.message);
  }
}

function evaluate(node: Node): number {
  switch (node.type) {
    case "number":
      return node.value;
    case "symbol":
      return CONSTANTS.get(node.name)!;
    case "parenthesis":
      return evaluate(node.content);
    case "refused":
      throw new Refused(node.message);
    case "call": {
      const { arity, apply } = FUNCTIONS.get(node.name)!;
      const [fewest, most] = arity;
      if (node.args.length < fewest || node.args.length > most) {
        const expected = fewest === most ? `${fewest}` : most === INFINITE ? `at least ${fewest}` : `${fewest} or ${most}`;
        const noun = expected.endsWith("1") ? "argument" : "arguments";
        throw new Refused(`function ${node.name} takes ${expected} ${noun}, not ${node.args.length}`);
      }
      return apply(...node.args.map(evaluate));
    }
    case "operator": {
      const [a, b] = node.args.map(evaluate) as [number, number];
      switch (node.fn) {
        case "add":
          return a + b;
        case "subtract":
          return a - b;
        case "multiply":
          return a * b;
        case "divide":
          return a / b;
        case "mod":
          return mod(a, b);
        case "pow":
          return pow(a, b);
        case "unaryMinus":
          return -a;
        case "unaryPlus":
          return a;
      }
    }
  }
}

/**
 * The value of `expression`, a finite real number, or an error worded for
 * the model to repair its call: "cannot parse …" for syntax, the construct
 * or name refused, "does not evaluate to a real number", "is not finite".
 */
export function calculate(expression: string): number {
  let root: Node;
  try {
    // Surrounding blank lines are not "several expressions".
    root = new Parser(tokenize(expression.trim())).parseStart();
  } catch (err) {
    if (err instanceof Refused) throw err;
    throw new Error(`cannot parse ${quote(expression)}: ${err instanceof Error ? err.message : String(err)}`);
  }
  check(root);
  let value: number;
  try {
    value = evaluate(root);
  } catch (err) {
    if (err instanceof NotReal) throw new Error(`${quote(expression)} does not evaluate to a real number (got Complex): ${err.message}`);
    throw err;
  }
  if (!Number.isFinite(value)) throw new Error(`${quote(expression)} is not finite (${value})`);
  // 14 significant digits hide binary noise such as 0.1 + 0.2 = 0.30000000000000004.
  return Number(value.toPrecision(14));
}
