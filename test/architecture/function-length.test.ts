/**
 * No function in src/ is longer than MAX_LINES: a hub that long becomes named
 * steps, each small enough to read at once (docs/design/engine.md#steps is
 * one). Functions are read with TypeScript's own parser; a function's lines
 * run from its first token to its closing brace. A function inside one that
 * is already too long is the outer one's to split, so only the outermost is
 * named.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { readGraph, SRC } from "../support/import-graph.js";

const MAX_LINES = 120;

interface Found {
  /** `file: name`, the function named by its declaration, or the variable, property or method it is the value of. */
  at: string;
  lines: number;
}

/** The functions of one source longer than `max` lines, the outermost of each nest. */
function longFunctions(file: string, source: string, max = MAX_LINES): Found[] {
  const sf = ts.createSourceFile(file, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Found[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && "body" in node && node.body) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      if (last - first + 1 > max) {
        found.push({ at: `${file}: ${nameOf(node, sf)}`, lines: last - first + 1 });
        return;
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function nameOf(node: ts.SignatureDeclaration, sf: ts.SourceFile): string {
  const parent = node.parent;
  const named = node.name ?? (parent && (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) ? parent.name : undefined);
  return named ? named.getText(sf) : `(anonymous, line ${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1})`;
}

describe("function length", () => {
  const found = readGraph().modules.flatMap((m) => longFunctions(m, readFileSync(join(SRC, m), "utf8")));

  it(`finds no function in src/ over ${MAX_LINES} lines`, () => {
    expect(
      found.map((f) => `src/${f.at} (${f.lines} lines)`),
      "split these into named steps",
    ).toEqual([]);
  });

  it("reads every kind of function, and names it", () => {
    const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join("\n");
    const source = [
      `export function declared() {\n${body(4)}\n}`,
      `const arrow = () => {\n${body(4)}\n};`,
      `class C {\n  method() {\n${body(4)}\n  }\n}`,
      `const table = { handler: function () {\n${body(4)}\n} };`,
      `function outer() {\n  const inner = () => {\n${body(4)}\n  };\n}`,
      `function short() {\n  return 1;\n}`,
    ].join("\n");
    expect(longFunctions("x.ts", source, 5).map((f) => f.at)).toEqual(["x.ts: declared", "x.ts: arrow", "x.ts: method", "x.ts: handler", "x.ts: outer"]);
  });
});
