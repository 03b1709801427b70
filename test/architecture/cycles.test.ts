/**
 * src/ has no import cycle, type-only imports included: a cycle of types is
 * still two modules that cannot be read, moved or tested one without the
 * other. Each cycle found is printed as the path round it.
 */
import { describe, expect, it } from "vitest";
import { cycles, imports, readGraph } from "../support/import-graph.js";

describe("reading imports", () => {
  it("reads every import, and marks the ones tsc erases as type-only", () => {
    const source = [
      'import { a } from "./value.js";',
      'import D, { type T } from "./default.js";',
      'import * as ns from "./namespace.js";',
      'import "./side-effect.js";',
      'import {\n  type A,\n  b,\n} from "./multiline.js";',
      'export { c } from "./reexport.js";',
      'export * from "./star.js";',
      'import type { T } from "./type.js";',
      'import { type A, type B } from "./type-specifiers.js";',
      'export type { T } from "./export-type.js";',
      'export { type T } from "./export-type-specifier.js";',
      'export type * from "./export-type-star.js";',
      '// import { x } from "./line-comment.js";',
      '/* import("./block-comment.js") */',
      'const text = `import { y } from "./template.js"`;',
      'const re = /import "\\.\\/regex.js"/;',
      'let t: typeof import("./typeof.js");',
      'let u: import("./import-type.js").T;',
      'const lazy = await import("./dynamic.js");',
      'import("./then.js").then(() => {});',
    ].join("\n");
    const found = imports("x.ts", source);
    const named = (typeOnly: boolean) =>
      found
        .filter((i) => i.typeOnly === typeOnly)
        .map((i) => i.specifier)
        .sort();
    expect(named(false)).toEqual(
      ["./default.js", "./dynamic.js", "./multiline.js", "./namespace.js", "./reexport.js", "./side-effect.js", "./star.js", "./then.js", "./value.js"].sort(),
    );
    expect(named(true)).toEqual(
      [
        "./export-type-specifier.js",
        "./export-type-star.js",
        "./export-type.js",
        "./import-type.js",
        "./type-specifiers.js",
        "./type.js",
        "./typeof.js",
      ].sort(),
    );
  });

  it("reports a cycle as the path round it", () => {
    const edges = [
      { from: "a.ts", to: "b.ts", typeOnly: false },
      { from: "b.ts", to: "c.ts", typeOnly: true },
      { from: "c.ts", to: "a.ts", typeOnly: false },
      { from: "c.ts", to: "d.ts", typeOnly: false },
    ];
    expect(cycles(["a.ts", "b.ts", "c.ts", "d.ts"], edges)).toEqual(["src/a.ts → src/b.ts → src/c.ts → src/a.ts"]);
  });
});

describe("src/ import graph", () => {
  it("has no import cycle among src/ modules, type-only imports included", () => {
    const graph = readGraph();
    expect(graph.edges.some((edge) => edge.typeOnly)).toBe(true);
    expect(cycles(graph.modules, graph.edges), "import cycles, each as one path round it").toEqual([]);
  });
});
