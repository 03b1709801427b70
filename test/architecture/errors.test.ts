/**
 * Every failure in src/ is a RuntimeError with a code (src/errors.ts): no
 * `throw new Error(...)` outside `unreachable()`, the one assertion of an
 * impossible state. Read with TypeScript's own parser, so comments and
 * strings that mention the words do not count.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const path = join(dir, d.name);
    if (d.isDirectory()) return sources(path);
    return /\.ts$/.test(d.name) && !d.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** `throw new Error(...)` statements of a file, as `file:line` and the function they are in. */
function bareThrows(file: string): { at: string; inFunction: string | undefined }[] {
  const text = readFileSync(file, "utf8");
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: { at: string; inFunction: string | undefined }[] = [];
  const visit = (node: ts.Node, fn: string | undefined): void => {
    const name = ts.isFunctionDeclaration(node) && node.name ? node.name.text : fn;
    if (
      ts.isThrowStatement(node) &&
      ts.isNewExpression(node.expression) &&
      ts.isIdentifier(node.expression.expression) &&
      node.expression.expression.text === "Error"
    ) {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart());
      found.push({ at: `${relative(SRC, file)}:${line + 1}`, inFunction: name });
    }
    ts.forEachChild(node, (child) => visit(child, name));
  };
  visit(source, undefined);
  return found;
}

describe("errors in src/", () => {
  it("no throw new Error outside unreachable() in src/errors.ts", () => {
    const files = sources(SRC);
    const found = files.flatMap(bareThrows);
    expect(found.filter((t) => !(t.at.startsWith("errors.ts:") && t.inFunction === "unreachable")).map((t) => t.at)).toEqual([]);
    // The check sees the one allowed throw, so it would see others.
    expect(found.filter((t) => t.inFunction === "unreachable")).toHaveLength(1);
  });

  it("no Error subclass but RuntimeError's own family", () => {
    const subclasses = sources(SRC).flatMap((file) => {
      const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
      const names: string[] = [];
      const visit = (node: ts.Node): void => {
        if (ts.isClassDeclaration(node)) {
          const heritage = node.heritageClauses?.flatMap((h) => h.types.map((t) => t.expression.getText(source))) ?? [];
          if (heritage.includes("Error")) names.push(`${relative(SRC, file)}: ${node.name?.text ?? "(anonymous)"}`);
        }
        ts.forEachChild(node, visit);
      };
      visit(source);
      return names;
    });
    expect(subclasses).toEqual(["errors.ts: RuntimeError"]);
  });
});
