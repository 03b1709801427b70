/** `runtime test --models A,B`: one table, a row per case and a column per model (docs/testing.md#repeats-and-models). */
import type { CaseResult } from "./runner.js";

/** Each cell: passes of runs, tokens, cost, time. */
export function modelTable(results: readonly CaseResult[], models: readonly string[]): string {
  const cases = [...new Map(results.map((r) => [`${r.file}\u0000${r.name}`, r])).values()];
  const cell = (r: CaseResult | undefined) =>
    r ? `${r.passed ? "✓" : "✗"} ${r.passes}/${r.runs} · ${r.tokens} tok · $${r.cost_usd.toFixed(4)} · ${(r.ms / 1000).toFixed(1)} s` : "-";
  const rows = cases.map((c) => [c.name, ...models.map((m) => cell(results.find((r) => r.file === c.file && r.name === c.name && r.model === m)))]);
  const header = ["case", ...models];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => [...(r[i] ?? "")].length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c + " ".repeat(Math.max(0, (widths[i] ?? 0) - [...c].length)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n") + "\n";
}
