/**
 * Generates src/config/raw-team.ts, the TypeScript types of a team value that
 * passed schemas/team.schema.json (ajv's defaults filled in), from the schema
 * itself, so the two cannot drift. test/config/raw-team.test.ts compares the file with
 * this output; `npx vitest run test/config/raw-team.test.ts -u` rewrites it.
 *
 * It understands the constructs the team schema uses, and throws on any other:
 * a new construct needs a rule here rather than a silently wrong type.
 */

type Node = Record<string, unknown>;

/** The kinds of nodes this generator knows how to type. */
const KNOWN_KEYWORDS = new Set([
  "$schema",
  "$id",
  "$defs",
  "$ref",
  "title",
  "description",
  "examples",
  "default",
  "type",
  "const",
  "enum",
  "properties",
  "required",
  "additionalProperties",
  "unevaluatedProperties",
  "propertyNames",
  "items",
  "allOf",
  "anyOf",
  "if",
  "then",
  "minProperties",
  "minItems",
  "uniqueItems",
  "minLength",
  "pattern",
  "minimum",
  "exclusiveMinimum",
  "maximum",
]);

/** The source of src/config/raw-team.ts for `schema`. */
export function generateRawTeamTypes(schema: Node): string {
  const defs = (schema.$defs ?? {}) as Record<string, Node>;
  const named = new Map<string, string>();
  for (const [name, def] of Object.entries(defs)) if (isNamed(def)) named.set(name, `Raw${pascal(name)}`);
  // Objects other objects `$ref` as their base: their keys are closed by the object that extends them.
  const bases = new Set(Object.values(defs).flatMap((def) => (def.type === "object" && typeof def.$ref === "string" ? [def.$ref] : [])));

  const resolveRef = (ref: string): [string, Node] => {
    const name = /^#\/\$defs\/([A-Za-z]+)$/.exec(ref)?.[1];
    const def = name === undefined ? undefined : defs[name];
    if (name === undefined || def === undefined) throw new Error(`unsupported $ref ${ref}`);
    return [name, def];
  };

  // A dispatcher's `if: {properties: {kind: {const: "react"}}}` makes `kind` a literal in its branch.
  const discriminants = new Map<string, Array<[string, unknown]>>();
  for (const def of Object.values(defs)) {
    for (const branch of dispatchBranches(def)) {
      const [target] = resolveRef(branch.ref);
      for (const [key, condition] of Object.entries(branch.condition)) {
        if (isNode(condition) && "const" in condition) discriminants.set(target, [...(discriminants.get(target) ?? []), [key, condition.const]]);
      }
    }
  }

  const typeOf = (node: Node, indent: string): string => {
    for (const key of Object.keys(node)) if (!KNOWN_KEYWORDS.has(key)) throw new Error(`unsupported keyword ${key}`);
    if (typeof node.$ref === "string") {
      const [name, def] = resolveRef(node.$ref);
      return named.get(name) ?? typeOf(def, indent);
    }
    if ("const" in node) return JSON.stringify(node.const);
    if (Array.isArray(node.enum)) return node.enum.map((v) => JSON.stringify(v)).join(" | ");
    switch (node.type) {
      case "string":
        return "string";
      case "integer":
      case "number":
        return "number";
      case "boolean":
        return "boolean";
      case "array": {
        const item = isNode(node.items) ? typeOf(node.items, indent) : "unknown";
        return /^[\w.]+$/.test(item) ? `${item}[]` : `Array<${item}>`;
      }
      case "object":
        if (isNode(node.properties)) return `{\n${members(node, `${indent}  `)}${indent}}`;
        return `Record<string, ${isNode(node.additionalProperties) ? typeOf(node.additionalProperties, indent) : "unknown"}>`;
      case undefined:
        return "unknown";
      default:
        throw new Error(`unsupported type ${JSON.stringify(node.type)}`);
    }
  };

  /** The members of an object schema; `overrides` are discriminants its dispatcher fixes. */
  const members = (node: Node, indent: string, overrides: Array<[string, unknown]> = [], isBase = false): string => {
    const required = new Set(Array.isArray(node.required) ? node.required : []);
    const props = Object.entries((node.properties ?? {}) as Record<string, Node>);
    const lines: string[] = [];
    for (const [key, value] of overrides) {
      if (!props.some(([k]) => k === key)) lines.push(`${indent}${key}: ${JSON.stringify(value)};\n`);
    }
    for (const [key, prop] of props) {
      // ajv fills a default in, so after validation the key is always there.
      const optional = !required.has(key) && !("default" in prop);
      lines.push(doc(prop, indent), `${indent}${key}${optional ? "?" : ""}: ${typeOf(prop, indent)};\n`);
    }
    // An object that does not forbid other keys lets them through validation (a tool's `parameters`).
    if (!isBase && node.additionalProperties === undefined && node.unevaluatedProperties === undefined && node.$ref === undefined) {
      lines.push(`${indent}[key: string]: unknown;\n`);
    }
    return lines.join("");
  };

  /** A TSDoc comment from a property's description (its own, else its $ref's) and its default. */
  const doc = (node: Node, indent: string): string => {
    let description = node.description;
    for (let n: Node = node; description === undefined && typeof n.$ref === "string"; ) {
      n = resolveRef(n.$ref)[1];
      description = n.description;
    }
    const parts = typeof description === "string" ? [description.replace(/\*\//g, "*\\/").replace(/\n/g, " ")] : [];
    if ("default" in node) parts.push(`@default ${JSON.stringify(node.default)}`);
    return parts.length === 0 ? "" : `${indent}/** ${parts.join(" ")} */\n`;
  };

  const declaration = (typeName: string, node: Node, overrides: Array<[string, unknown]>, isBase: boolean): string => {
    const comment = doc({ description: node.description }, "");
    const branches = dispatchBranches(node);
    if (branches.length > 0) {
      return `${comment}export type ${typeName} = ${branches.map((b) => named.get(resolveRef(b.ref)[0]) ?? "never").join(" | ")};\n`;
    }
    if (node.type !== "object") return `${comment}export type ${typeName} = ${typeOf(node, "")};\n`;
    for (const key of Object.keys(node)) if (!KNOWN_KEYWORDS.has(key)) throw new Error(`unsupported keyword ${key}`);
    const base = typeof node.$ref === "string" ? named.get(resolveRef(node.$ref)[0]) : undefined;
    return `${comment}export interface ${typeName}${base ? ` extends ${base}` : ""} {\n${members(node, "  ", overrides, isBase)}}\n`;
  };

  const out = [
    "/**",
    " * Types of a team value that passed schemas/team.schema.json, with ajv's",
    " * defaults filled in (a key with a schema `default` is never missing).",
    " * Generated by scripts/generate-raw-team.ts; do not edit by hand:",
    " * `npx vitest run test/config/raw-team.test.ts -u` regenerates it.",
    " */",
    "",
    declaration("RawTeam", schema, [], false),
  ];
  for (const [name, typeName] of named) {
    out.push(declaration(typeName, defs[name] ?? {}, discriminants.get(name) ?? [], bases.has(`#/$defs/${name}`)));
  }
  return out.join("\n");
}

/** A def gets a named type when it is an object, a union of objects or an enum; scalars are inlined. */
function isNamed(def: Node): boolean {
  return def.type === "object" || Array.isArray(def.enum) || dispatchBranches(def).length > 0;
}

/** The `allOf: [{if, then: {$ref}}]` branches by which a schema dispatches to one of several objects. */
function dispatchBranches(node: Node): Array<{ condition: Node; ref: string }> {
  if (!Array.isArray(node.allOf)) return [];
  return node.allOf.flatMap((branch: unknown) => {
    if (!isNode(branch) || !isNode(branch.if) || !isNode(branch.then) || typeof branch.then.$ref !== "string") return [];
    return [{ condition: isNode(branch.if.properties) ? branch.if.properties : {}, ref: branch.then.$ref }];
  });
}

function pascal(name: string): string {
  return name.charAt(0).toUpperCase() + name.slice(1);
}

function isNode(value: unknown): value is Node {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
