import { describe, expect, it } from "vitest";
import { jsonCandidates, parseJsonTolerant } from "../../src/parse/json.js";

const candidates = (text: string, options?: Parameters<typeof jsonCandidates>[1]) => [...jsonCandidates(text, options)];

describe("jsonCandidates", () => {
  it("yields the whole trimmed text, then fenced blocks, then balanced spans, skipping repeats", () => {
    const text = '  Plan: ```json\n{"a": 1}\n``` or {"b": {"c": 2}}  ';
    expect(candidates(text)).toEqual(['Plan: ```json\n{"a": 1}\n``` or {"b": {"c": 2}}', '{"a": 1}', '{"b": {"c": 2}}', '{"c": 2}']);
  });

  it("takes every fenced block, whatever its language tag, and skips empty ones", () => {
    const text = '```\n```\n```JSON\n{"a": 1}\n```\n```js\n{"b": 2}```';
    expect(candidates(text, { maxSpanStarts: 0 }).slice(1)).toEqual(['{"a": 1}', '{"b": 2}']);
  });

  it("with fences 'whole', unwraps only a fence around the whole text, inner fences included", () => {
    expect(candidates('```json\n{"a": 1}\n```', { fences: "whole" })).toContain('{"a": 1}');
    const inner = '```json\n{"code": "```py\\nx\\n```"}\n```';
    expect(candidates(inner, { fences: "whole", maxSpanStarts: 0 })).toEqual([inner, '{"code": "```py\\nx\\n```"}']);
    expect(candidates('say ```json\n{"a": 1}\n```', { fences: "whole", maxSpanStarts: 0 })).toEqual(['say ```json\n{"a": 1}\n```']);
  });

  it("with whole 'object', skips the whole text unless it opens with a brace", () => {
    expect(candidates('Sure: {"a": 1}', { whole: "object" })).toEqual(['{"a": 1}']);
    expect(candidates('{"a": 1} ok', { whole: "object" })).toEqual(['{"a": 1} ok', '{"a": 1}']);
  });

  it("honours strings when balancing braces, escaped quotes included", () => {
    const text = 'Sure. {"s": "print \\"}\\" then {x}", "n": [1, {"m": "]"}]} Done.';
    expect(candidates(text)[1]).toBe('{"s": "print \\"}\\" then {x}", "n": [1, {"m": "]"}]}');
  });

  it("tries the first unbalanced object up to the last brace, so its parse error can be reported", () => {
    expect(candidates('x {"a": {"b": 1}', { whole: "object" })).toEqual(['{"a": {"b": 1}', '{"b": 1}']);
    expect(candidates('x {"a": {"b": 1}', { whole: "object", maxSpanStarts: 1 })).toEqual(['{"a": {"b": 1}']);
    // A mismatched bracket does not close an object.
    expect(candidates('{"a": [1}', { whole: "object", maxSpanStarts: 1 })).toEqual(['{"a": [1}']);
    expect(candidates("no braces here }", { whole: "object" })).toEqual([]);
  });

  it("tries balanced spans from the first 32 braces only", () => {
    const text = `${"{".repeat(40)}{"a": 1}`;
    expect(candidates(text, { whole: "object" })).toEqual([text]);
    expect(candidates(text, { whole: "object", maxSpanStarts: 41 })).toEqual([text, '{"a": 1}']);
    const objects = Array.from({ length: 40 }, (_, i) => `{"i": ${i}}`).join(" ");
    const spans = candidates(`x ${objects}`, { whole: "object" });
    expect(spans).toHaveLength(32);
    expect(spans.at(-1)).toBe('{"i": 31}');
  });

  it("with repair, adds each candidate without trailing commas, after every exact one", () => {
    expect(candidates('{"a": [1, 2,], "b": {"c": 3 , } ,}', { repair: true, maxSpanStarts: 0 })).toEqual([
      '{"a": [1, 2,], "b": {"c": 3 , } ,}',
      '{"a": [1, 2], "b": {"c": 3  } }',
    ]);
    const fenced = '```json\n{"a": 1,}\n```';
    expect(candidates(fenced, { repair: true, fences: "whole", maxSpanStarts: 0 })).toEqual([fenced, '{"a": 1,}', '```json\n{"a": 1}\n```', '{"a": 1}']);
  });

  it("leaves commas inside strings alone when repairing", () => {
    expect(candidates('{"a": "x, }", "b": "y,]",}', { repair: true, maxSpanStarts: 0 })).toEqual(['{"a": "x, }", "b": "y,]",}', '{"a": "x, }", "b": "y,]"}']);
  });

  it("yields nothing for blank text", () => {
    expect(candidates("  \n ")).toEqual([]);
  });
});

describe("parseJsonTolerant", () => {
  it("parses bare JSON, of any type unless told otherwise", () => {
    expect(parseJsonTolerant(' {"a": 1} ')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseJsonTolerant("[1, 2]")).toEqual({ ok: true, value: [1, 2] });
  });

  it("finds JSON in a fence or in prose", () => {
    expect(parseJsonTolerant('Here:\n```json\n{"a": 1}\n```\nDone.')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseJsonTolerant('I think {"a": "b}"} is right, not {c}')).toEqual({ ok: true, value: { a: "b}" } });
  });

  it("gives the first value accepted, letting later candidates win over refused ones", () => {
    const accept = (v: unknown) => typeof v === "object" && v !== null && "steps" in v;
    expect(parseJsonTolerant('Example: {"foo": 1}. Real: {"steps": []}', { accept })).toEqual({
      ok: true,
      value: { steps: [] },
    });
    const seen: unknown[] = [];
    const refused = parseJsonTolerant('{"foo": 1} {"bar": 2}', {
      accept: (v) => {
        seen.push(v);
        return false;
      },
    });
    expect(refused).toEqual({ ok: false, error: expect.any(String), attempted: 3 });
    expect(seen).toEqual([{ foo: 1 }, { bar: 2 }]);
  });

  it("repairs trailing commas only when asked, and prefers exact JSON", () => {
    expect(parseJsonTolerant('{"a": [1,],}')).toMatchObject({ ok: false });
    expect(parseJsonTolerant('{"a": [1,],}', { repair: true })).toEqual({ ok: true, value: { a: [1] } });
    // The exact fenced object wins over the repaired whole text.
    expect(parseJsonTolerant('{"x": 1,} ```json\n{"y": 2}\n```', { repair: true, maxSpanStarts: 0 })).toEqual({
      ok: true,
      value: { y: 2 },
    });
  });

  it("reports the first JSON.parse error, whole, and how many candidates were tried", () => {
    let expected = "";
    try {
      JSON.parse('{"a": 1,\n"b"}');
    } catch (err) {
      expected = (err as Error).message;
    }
    expect(parseJsonTolerant('{"a": 1,\n"b"}')).toEqual({ ok: false, error: expected, attempted: 1 });
    expect(parseJsonTolerant('{"a": {"b": 1}', { whole: "object", maxSpanStarts: 1 })).toEqual({
      ok: false,
      error: expect.stringContaining("JSON"),
      attempted: 1,
    });
  });

  it("says when nothing looked like JSON", () => {
    expect(parseJsonTolerant("just prose", { whole: "object" })).toEqual({ ok: false, error: undefined, attempted: 0 });
    expect(parseJsonTolerant("")).toEqual({ ok: false, error: undefined, attempted: 0 });
  });

  it("stays linear on a long reply full of braces", () => {
    const text = "{".repeat(200_000);
    const started = performance.now();
    expect(parseJsonTolerant(text)).toMatchObject({ ok: false, attempted: 1 });
    // A bound that only catches a quadratic scan: one parse attempt per brace would take minutes.
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});
