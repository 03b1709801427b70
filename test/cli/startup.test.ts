import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, runCli } from "../support/cli.js";

/**
 * The packages a built module reaches through static imports (dynamic
 * `import()` is not followed: that is what keeps a command's engine out of
 * start-up).
 */
function staticPackages(entry: string): Set<string> {
  const packages = new Set<string>();
  const seen = new Set<string>();
  const visit = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/^\s*(?:import|export)\s(?:[^;]*?\sfrom\s)?\s*"([^"]+)"/gm)) {
      const spec = m[1] ?? "";
      if (spec.startsWith(".")) visit(resolve(dirname(file), spec));
      else packages.add(spec);
    }
  };
  visit(entry);
  return packages;
}

describe("runtime start-up", () => {
  it("registers the commands without loading the engine: main and every command module import only node built-ins and commander statically", () => {
    const main = join(ROOT, "dist/cli/main.js");
    expect(existsSync(main)).toBe(true);
    // main imports each command's module when that command runs (COMMANDS in src/cli/main.ts), so each is checked too.
    const commands = readdirSync(join(ROOT, "dist/cli/commands")).filter((f) => f.endsWith(".js"));
    expect(commands.length).toBeGreaterThanOrEqual(14);
    for (const entry of [main, ...commands.map((f) => join(ROOT, "dist/cli/commands", f))]) {
      const heavy = [...staticPackages(entry)].filter((p) => !p.startsWith("node:") && p !== "commander");
      expect({ entry, heavy }).toEqual({ entry, heavy: [] });
    }
  });

  it("--help and each command's help still print, exit 0", async () => {
    const top = await runCli(["--help"]);
    expect(top.code).toBe(0);
    for (const name of ["validate", "schema", "trace", "exec", "graph", "plan", "serve"]) expect(top.stdout).toContain(name);
    expect(top.stdout).toContain("Exit status: 0 success; 1 the run ended in error");
    for (const name of ["validate", "schema", "trace", "plan"]) {
      const r = await runCli([name, "--help"]);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain(`Usage: runtime ${name}`);
    }
  });
});
