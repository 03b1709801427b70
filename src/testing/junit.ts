/** JUnit XML of a test run (`runtime test --junit FILE`): one testsuite per test file, one testcase per case. */
import type { CaseResult } from "./runner.js";
import { format } from "./expectations.js";

/** The report as JUnit XML; every text is escaped, and characters XML 1.0 cannot hold are dropped. */
export function junitXml(results: CaseResult[], totalMs: number): string {
  const files = [...new Set(results.map((r) => r.file))];
  const failures = results.filter((r) => !r.passed).length;
  const lines = [
    `<?xml version="1.0" encoding="UTF-8"?>`,
    `<testsuites name="runtime test" tests="${results.length}" failures="${failures}" errors="0" time="${seconds(totalMs)}">`,
  ];
  for (const file of files) {
    const cases = results.filter((r) => r.file === file);
    const failed = cases.filter((r) => !r.passed).length;
    const ms = cases.reduce((n, r) => n + r.ms, 0);
    lines.push(`  <testsuite name="${attr(file)}" tests="${cases.length}" failures="${failed}" errors="0" skipped="0" time="${seconds(ms)}">`);
    for (const r of cases) {
      // With --models each case is one testcase per model; with --repeat its properties say how many runs passed.
      const name = r.model !== undefined ? `${r.name} [${r.model}]` : r.name;
      const open = `    <testcase name="${attr(name)}" classname="${attr(file)}" file="${attr(file)}" line="${r.line}" time="${seconds(r.ms)}"`;
      const properties =
        r.runs > 1 || r.model !== undefined
          ? [
              "      <properties>",
              `        <property name="passes" value="${r.passes}/${r.runs}"/>`,
              `        <property name="tokens" value="${r.tokens}"/>`,
              `        <property name="cost_usd" value="${r.cost_usd.toFixed(6)}"/>`,
              "      </properties>",
            ]
          : [];
      if (r.passed) {
        lines.push(...(properties.length ? [`${open}>`, ...properties, "    </testcase>"] : [`${open}/>`]));
        continue;
      }
      const first = r.differences[0];
      const message = first ? format(first) : "failed";
      lines.push(
        `${open}>`,
        ...properties,
        `      <failure message="${attr(message)}" type="expectation">${text(r.differences.map(format).join("\n"))}</failure>`,
        "    </testcase>",
      );
    }
    lines.push("  </testsuite>");
  }
  lines.push("</testsuites>", "");
  return lines.join("\n");
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}

// Characters outside XML 1.0's Char production cannot appear even escaped.
const NOT_XML = /[^\x09\x0A\x0D\x20-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu;

function text(value: string): string {
  return value.replace(NOT_XML, "").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

function attr(value: string): string {
  return text(value).replace(/"/g, "&quot;").replace(/'/g, "&apos;").replace(/\n/g, "&#10;").replace(/\r/g, "&#13;").replace(/\t/g, "&#9;");
}
