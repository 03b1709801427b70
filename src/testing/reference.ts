/**
 * The key reference of the agent test format, generated from
 * `schemas/agent-test.schema.json` so the two cannot drift: it is the part of
 * docs/testing.md between its reference markers (`node scripts/agent-test-reference.mjs`
 * rewrites it, a test checks it).
 */
import { agentTestSchema } from "./schema.js";

type Node = Record<string, unknown>;

const SECTIONS: Array<{ title: string; path: string[] }> = [
  { title: "Top level", path: [] },
  { title: "A case (`cases[]`)", path: ["$defs", "case"] },
  { title: "A reply (`replies[]`, the scripted model's format)", path: ["$defs", "reply"] },
  { title: "Expectations (`expect`)", path: ["$defs", "expect"] },
  { title: "Text matcher (`answer`, `error`)", path: ["$defs", "textMatcher"] },
  { title: "Tool calls as a mapping (`tool_calls`)", path: ["$defs", "toolCalls", "else"] },
  { title: "A tool call (`tool_calls[]`, `in_order[]`, `any_order[]`)", path: ["$defs", "toolCall", "else"] },
  { title: "Argument matcher (`arguments.NAME`)", path: ["$defs", "valueMatcher"] },
  { title: "Todo list (`expect.todos`)", path: ["$defs", "expect", "properties", "todos"] },
  { title: "Plan (`expect.plan`)", path: ["$defs", "expect", "properties", "plan"] },
  { title: "Budget (`expect.budget`)", path: ["$defs", "expect", "properties", "budget"] },
];

/** The reference as Markdown: one table of keys per object of the format. */
export function agentTestReference(): string {
  const schema = agentTestSchema();
  const out: string[] = [];
  for (const section of SECTIONS) {
    const node = section.path.reduce<Node>((n, key) => (n[key] ?? {}) as Node, schema);
    const required = new Set((node.required as string[] | undefined) ?? []);
    out.push(`### ${section.title}`, "");
    if (typeof node.description === "string") out.push(node.description, "");
    out.push("| key | type | required | description |", "|---|---|---|---|");
    for (const [key, value] of Object.entries((node.properties ?? {}) as Record<string, Node>)) {
      const resolved = resolve(schema, value);
      const description = String(value.description ?? resolved.description ?? "").replace(/\|/g, "\\|");
      out.push(
        `| \`${key}\` | ${typeOf(resolved)} | ${required.has(key) ? "yes" : ""} | ${description}${value.default !== undefined ? ` Default \`${JSON.stringify(value.default)}\`.` : ""} |`,
      );
    }
    out.push("");
  }
  return out.join("\n");
}

function resolve(schema: Node, node: Node): Node {
  const ref = node.$ref;
  if (typeof ref !== "string") return node;
  return ref
    .slice(2)
    .split("/")
    .reduce<Node>((n, key) => (n[key] ?? {}) as Node, schema);
}

function typeOf(node: Node): string {
  if (Array.isArray(node.enum)) return node.enum.map((v) => `\`${String(v)}\``).join(" \\| ");
  if (node.const !== undefined) return `\`${JSON.stringify(node.const)}\``;
  const type = node.type;
  const names = (Array.isArray(type) ? type : type === undefined ? [] : [type]).map((t) =>
    t === "array" && (node.items as Node | undefined)?.$ref
      ? `list of ${String((node.items as Node).$ref)
          .split("/")
          .pop()}`
      : String(t),
  );
  if (names.length === 0) return node.$ref || node.if ? "matcher or value" : "any";
  return names.join(" \\| ");
}
