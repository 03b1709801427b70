/** Every example team ships with agent tests, and `runtime test teams/` passes them (a spawned CLI). */
import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";

describe("runtime test teams/", () => {
  const teams = readdirSync("teams").filter((f) => f.endsWith(".yaml") && !f.endsWith(".test.yaml"));

  it("every example team has a test file naming it", () => {
    expect(teams.length).toBeGreaterThanOrEqual(7);
    for (const team of teams) {
      const test = `teams/${team.replace(/\.yaml$/, ".test.yaml")}`;
      expect(readFileSync(test, "utf8"), test).toContain(`team: ./${team}`);
    }
  });

  it("passes every case, one line per case", async () => {
    const r = await runCli(["test", "teams/"], { timeoutMs: 60_000 });
    expect(r.stderr).toBe("");
    expect(r.code, r.stdout).toBe(0);
    const lines = r.stdout.split("\n").filter((l) => /^ {2}[✓✗] /.test(l));
    expect(lines.length).toBeGreaterThanOrEqual(teams.length);
    expect(lines.every((l) => l.startsWith("  ✓ "))).toBe(true);
    expect(r.stdout).toContain(`\n${lines.length} passed, 0 failed (`);
    for (const team of teams) expect(r.stdout).toContain(`teams/${team.replace(/\.yaml$/, ".test.yaml")}\n`);
  }, 60_000);
});
