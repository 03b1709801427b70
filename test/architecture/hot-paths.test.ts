/**
 * Code that runs for every event, model call or tool call builds objects
 * without the spread-first form `{ ...x, more }`: on Node 20 each property a
 * spread-made object gains takes a slow path, ~1 µs, and the event bus paid
 * ~4 µs an event so (docs/performance.md#object-spread,
 * `node bench/object-spread.mjs`). `Object.assign({}, x, { more })`, plain
 * sets, or the new fields first keep to the fast path.
 *
 * Read from the .ts sources with the TypeScript parser, so no build is needed.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

/** The files on the per-event and per-call path of a run. */
const HOT = [
  "events/bus.ts",
  "engine/agent-step.ts",
  "engine/model-call.ts",
  "engine/journal.ts",
  "engine/state-reporter.ts",
  "store/committer.ts",
  "tools/toolbox.ts",
  "kinds/react/machine.ts",
  "kinds/react/run.ts",
  "kinds/react/state.ts",
  "redact.ts",
];

/** `file:line: text` of every object literal that starts with a spread and has more members. */
function spreadFirst(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isObjectLiteralExpression(node) && node.properties.length > 1 && ts.isSpreadAssignment(node.properties[0]!)) {
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      found.push(`${file}:${line}: ${node.getText().replace(/\s+/g, " ").slice(0, 80)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe("hot paths", () => {
  it("finds the spread-first form, and only it", () => {
    const found = spreadFirst(
      "x.ts",
      "const a = { ...b, c: 1 };\nconst d = { c: 1, ...b };\nconst e = { ...b };\nconst f = Object.assign({}, b, { c: 1 });\nconst g = { ...b, ...h };",
    );
    expect(found).toEqual(["x.ts:1: { ...b, c: 1 }", "x.ts:5: { ...b, ...h }"]);
  });

  it("build no object as { ...x, more } per event or call", () => {
    const found = HOT.flatMap((file) => spreadFirst(file, readFileSync(`${SRC}${file}`, "utf8")));
    expect(found).toEqual([]);
  });
});
