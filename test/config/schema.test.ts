import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Ajv2020 } from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";
import { BUILTIN_TOOL_NAMES } from "../../src/config/tool-names.js";
import { schemaMarkdown } from "../../src/config/schema-doc.js";
import { runCli } from "../support/cli.js";

const schemaText = readFileSync("schemas/team.schema.json", "utf8");
const schema = JSON.parse(schemaText) as Record<string, unknown>;
type Node = Record<string, unknown>;

/** Every schema object under `properties` anywhere in the schema, with its pointer. */
function propertySchemas(node: unknown, path = "#"): Array<[string, Node]> {
  if (typeof node !== "object" || node === null) return [];
  const out: Array<[string, Node]> = [];
  for (const [key, value] of Object.entries(node as Node)) {
    if (key === "examples" || key === "default") continue;
    if (key === "properties" && typeof value === "object" && value !== null) {
      for (const [name, prop] of Object.entries(value as Node)) {
        if (typeof prop === "object" && prop !== null) out.push([`${path}/properties/${name}`, prop as Node]);
      }
    }
    out.push(...propertySchemas(value, `${path}/${key}`));
  }
  return out;
}

function resolveDescription(prop: Node): string | undefined {
  let current: Node | undefined = prop;
  for (let i = 0; current && i < 8; i++) {
    if (typeof current.description === "string") return current.description;
    const ref: unknown = current.$ref;
    current =
      typeof ref === "string"
        ? (ref
            .slice(2)
            .split("/")
            .reduce<unknown>((n, k) => (n as Node)[k], schema) as Node)
        : undefined;
  }
  return undefined;
}

describe("schemas/team.schema.json", () => {
  it("is a valid JSON Schema 2020-12 that ajv compiles in strict mode", () => {
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    expect(ajv.validateSchema(schema)).toBe(true);
    expect(() => ajv.compile(schema)).not.toThrow();
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
  });

  it("describes every key (outside the branch conditions)", () => {
    const undocumented = propertySchemas(schema)
      .filter(([path]) => !path.includes("/if/") && !path.includes("/anyOf/"))
      .filter(([, prop]) => !resolveDescription(prop))
      .map(([path]) => path);
    expect(undocumented).toEqual([]);
  });

  it("lists the same built-in tools as src/config/tool-names.ts", () => {
    const defs = schema.$defs as Record<string, Node>;
    const builtin = (defs.builtinTool!.properties as Record<string, Node>).builtin!;
    expect(builtin.enum).toEqual([...BUILTIN_TOOL_NAMES]);
  });

  it("`runtime schema` prints it, and --markdown prints docs/team-file.md", async () => {
    const json = await runCli(["schema"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual(schema);
    const md = await runCli(["schema", "--markdown"]);
    expect(md.code).toBe(0);
    expect(md.stdout).toBe(readFileSync("docs/team-file.md", "utf8"));
  });

  it("docs/team-file.md is up to date with the schema and names every key", () => {
    const doc = readFileSync("docs/team-file.md", "utf8");
    expect(doc).toBe(schemaMarkdown());
    for (const [path] of propertySchemas(schema).filter(
      ([p]) =>
        !p.includes("/if/") &&
        !p.includes("/anyOf/") &&
        !p.includes("/$defs/tool/") &&
        !p.includes("/$defs/model/") &&
        !p.includes("/$defs/agent/") &&
        !p.includes("/toolParameters/"),
    )) {
      const key = path.split("/").pop()!;
      expect(doc, path).toContain(`\`${key}\``);
    }
  });
});

describe("the precompiled team validator", () => {
  it("npm run build writes it from this very schema, and it judges like the compiled one", async () => {
    const { createRequire } = await import("node:module");
    const { teamValidatorSource } = await import("../../src/config/schema.js");
    const require = createRequire(import.meta.url);
    const built = require("../../dist/config/team-validator.cjs") as ((v: unknown) => boolean) & { schemaHash: string; errors?: unknown[] };
    // A dist/ older than the schema would be skipped silently at run time (and cost ~150 ms): rebuild.
    // The source carries the stamp of the schema text and ajv's options (src/config/precompiled.ts).
    expect(built.schemaHash).toMatch(/^[0-9a-f]{64}$/);
    expect(readFileSync("dist/config/team-validator.cjs", "utf8")).toBe(teamValidatorSource());
    const compiled = new Ajv2020({ strict: true, allErrors: true, useDefaults: true, verbose: true, validateSchema: false, inlineRefs: false }).compile(schema);
    for (const value of [{}, { version: 1, name: "t", models: {}, agents: { a: { kind: "reakt" } } }, { version: 2, extra: true }]) {
      const [a, b] = [structuredClone(value), structuredClone(value)];
      expect(built(a)).toBe(compiled(b));
      expect((built.errors ?? []).map((e) => JSON.stringify(e, ["instancePath", "keyword", "message"]))).toEqual(
        (compiled.errors ?? []).map((e) => JSON.stringify(e, ["instancePath", "keyword", "message"])),
      );
      expect(a).toEqual(b);
    }
  });
});

describe("the precompiled script validator", () => {
  it("npm run build writes it from the script schema, and it judges scripts like the compiled one", async () => {
    const { createRequire } = await import("node:module");
    const { scriptSchema, scriptValidatorSource } = await import("../../src/models/script-format.js");
    const { Ajv } = await import("ajv");
    const require = createRequire(import.meta.url);
    const built = require("../../dist/models/script-validator.cjs") as ((v: unknown) => boolean) & { schemaHash: string; errors?: unknown[] };
    expect(readFileSync("dist/models/script-validator.cjs", "utf8")).toBe(scriptValidatorSource());
    const compiled = new Ajv({ strict: true, allErrors: true, allowUnionTypes: true, validateSchema: false }).compile(structuredClone(scriptSchema) as object);
    const values = [
      { version: 1, replies: [{ content: "hi" }] },
      { version: 1, replies: [{ tool_calls: [{ name: "calculator", arguments: { expression: "1+1" } }], usage: { prompt_tokens: 1 } }] },
      { version: 2, replies: [{ content: 3, extra: true }] },
      { version: 1, replies: [{ tool_calls: [{ name: "" }], delay_ms: -1 }] },
      [],
    ];
    for (const value of values) {
      expect(built(value), JSON.stringify(value)).toBe(compiled(value));
      expect((built.errors ?? []).map((e) => JSON.stringify(e, ["instancePath", "keyword", "message"]))).toEqual(
        (compiled.errors ?? []).map((e) => JSON.stringify(e, ["instancePath", "keyword", "message"])),
      );
    }
    expect(built(values[0])).toBe(true);
    expect(built(values[2])).toBe(false);
  });
});

describe("the precompiled built-in tools' argument validators", () => {
  it("npm run build writes one per built-in tool from its own schema, judging like a compiled one", async () => {
    const { createRequire } = await import("node:module");
    const { builtinArgsValidatorSources } = await import("../../src/tools/builtin/validators.js");
    const { CALCULATOR_PARAMETERS } = await import("../../src/tools/builtin/calculator.js");
    const { TERMINATE_PARAMETERS } = await import("../../src/tools/builtin/terminate.js");
    const { createParametersAjv } = await import("../../src/config/tool-parameters.js");
    const require = createRequire(import.meta.url);
    const cases: Record<string, [object, unknown[]]> = {
      calculator: [
        CALCULATOR_PARAMETERS,
        [{ expression: "1+1" }, { expression: "" }, { expression: 3 }, {}, { expression: "1", extra: true }, { expression: "x".repeat(2001) }],
      ],
      terminate: [TERMINATE_PARAMETERS, [{ answer: "done" }, { answer: "no", status: "failure" }, { answer: "x", status: "maybe" }, { status: "success" }, []]],
    };
    const sources = builtinArgsValidatorSources();
    expect(sources).toHaveLength(Object.keys(cases).length);
    for (const { file, source } of sources) {
      // A dist/ older than a schema would be skipped silently at run time (and ajv would compile): rebuild.
      const path = fileURLToPath(file).replace(/\/src\/tools\/builtin\//, "/dist/tools/builtin/");
      expect(readFileSync(path, "utf8"), path).toBe(source);
      const tool = /\/([a-z_]+)-arguments\.cjs$/.exec(path)?.[1] ?? "";
      const [schema, values] = cases[tool]!;
      const built = require(path) as ((v: unknown) => boolean) & { errors?: unknown[] };
      const compiled = createParametersAjv().compile(schema);
      for (const value of values) {
        expect(built(value), `${tool} ${JSON.stringify(value)}`).toBe(compiled(value));
        expect((built.errors ?? []).map((e) => JSON.stringify(e, ["instancePath", "keyword", "message", "params"]))).toEqual(
          (compiled.errors ?? []).map((e) => JSON.stringify(e, ["instancePath", "keyword", "message", "params"])),
        );
      }
    }
  });

  it("serve a built-in tool's own schema object only: an equal schema of another tool is compiled", async () => {
    // The built code, as a run uses it (running from the sources there is no precompiled file).
    const dist = (path: string) => new URL(`../../dist/${path}`, import.meta.url).href;
    const { builtinArgsValidator } = (await import(dist("tools/builtin/validators.js"))) as typeof import("../../src/tools/builtin/validators.js");
    const { CALCULATOR_PARAMETERS } = (await import(dist("tools/builtin/calculator.js"))) as typeof import("../../src/tools/builtin/calculator.js");
    const own = builtinArgsValidator(CALCULATOR_PARAMETERS);
    expect(own).toBeTypeOf("function");
    expect(own!({ expression: "1" })).toBe(true);
    expect(builtinArgsValidator(structuredClone(CALCULATOR_PARAMETERS))).toBeUndefined();
  });
});
