/** Small helpers shared by the benchmarks: medians, CPU deltas, table printing. */

/** Median of a list of numbers (NaN when empty). */
export function median(values) {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** Wall time (ms) and CPU time of this process (ms, user + system) spent in `fn`. */
export async function measure(fn) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const value = await fn();
  const wall = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { wall, cpu: (used.user + used.system) / 1000, value };
}

/** Print rows as an aligned table; the first column is left-aligned, the others right-aligned. */
export function printTable(header, rows) {
  const all = [header, ...rows].map((r) => r.map(String));
  const widths = header.map((_, i) => Math.max(...all.map((r) => r[i]?.length ?? 0)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join("  ");
  console.log(line(all[0]));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of all.slice(1)) console.log(line(r));
}

/** A number with a fixed count of decimals. */
export const fixed = (n, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
