/**
 * The default prompts go out with every model request. V8 keeps a string
 * whose characters all fit in Latin-1 as one byte a character; one character
 * beyond (an em dash, an arrow) makes the rendered prompt, and so the whole
 * request's JSON, two bytes a character, which undici then converts again
 * (`toWellFormed`) before encoding it: ~100 KB more allocated per 10-step
 * react run, 1,962 KB against 1,858 (docs/performance.md#one-byte-requests).
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const PROMPTS = fileURLToPath(new URL("../../prompts/", import.meta.url));

describe("default prompts", () => {
  test("are Latin-1 text, so the requests they start stay one-byte strings", () => {
    const files = readdirSync(PROMPTS).filter((f) => f.endsWith(".hbs"));
    expect(files).toContain("react.hbs");
    const beyond = files.flatMap((file) =>
      readFileSync(`${PROMPTS}${file}`, "utf8")
        .split("\n")
        .flatMap((line, i) => [...line].filter((c) => c.codePointAt(0)! > 0xff).map((c) => `${file}:${i + 1}: ${c} (U+${c.codePointAt(0)!.toString(16).toUpperCase()})`)),
    );
    expect(beyond).toEqual([]);
  });
});
