/**
 * `runtime init` for every kind, then `validate`, `exec` and `test` on the new
 * folder: spawned CLI processes from the built bin/runtime.js.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";

const KINDS = ["react", "plan_and_solve", "plan_and_solve_flow", "plan_solver", "sop"];
const QUESTION = "How many words and characters are in: the quick brown fox jumps over the lazy dog?";

describe("runtime init", () => {
  for (const kind of KINDS) {
    it(`--kind ${kind}: a folder that validates, runs and passes its tests offline`, async () => {
      const dir = join(tempDir(), `new-${kind}`);
      const init = await runCli(["init", dir, "--kind", kind]);
      expect(init.stderr).toBe("");
      expect(init.code).toBe(0);
      expect(init.stdout).toContain(`runtime exec ${dir}/team.yaml`);
      expect(init.stdout).toContain(`runtime test ${dir}`);
      expect(init.stdout).toContain("api_key: ${OPENAI_API_KEY}");

      const team = readFileSync(join(dir, "team.yaml"), "utf8");
      const schemaLine = /^# yaml-language-server: \$schema=(\S+)\n/.exec(team);
      expect(schemaLine, "team.yaml starts with the schema comment").not.toBeNull();
      // The path is relative to the folder and leads to the package's schema.
      expect(existsSync(join(dir, schemaLine![1]!))).toBe(true);
      expect(schemaLine![1]).toMatch(/schemas\/team\.schema\.json$/);
      expect(team).toMatch(new RegExp(`^name: new-${kind}$`, "m"));
      expect(existsSync(join(dir, "tools/word-count.mjs"))).toBe(true);

      const validate = await runCli(["validate", join(dir, "team.yaml")]);
      expect(validate.stderr).toBe("");
      expect(validate.code).toBe(0);

      const exec = await runCli(["exec", join(dir, "team.yaml"), QUESTION, "--trace-dir", join(dir, ".runtime")]);
      expect(exec.code, exec.stderr).toBe(0);
      // The figures come from the word_count tool the scripted replies quote.
      expect(exec.stdout).toContain("9 words and 43 characters");

      const test = await runCli(["test", dir]);
      expect(test.code, test.stdout + test.stderr).toBe(0);
      expect(test.stdout).toMatch(/✓ .+ \(\d+ ms\)/);
      expect(test.stdout).toMatch(/\n[1-9]\d* passed, 0 failed \(\d+ ms\)\n$/);
    }, 60_000);
  }

  it("refuses to overwrite an existing file, and writes nothing (exit 2)", async () => {
    const dir = tempDir();
    writeFileSync(join(dir, "team.yaml"), "mine\n");
    const r = await runCli(["init", dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("refusing to overwrite existing files");
    expect(r.stderr).toContain("team.yaml");
    expect(readFileSync(join(dir, "team.yaml"), "utf8")).toBe("mine\n");
    expect(existsSync(join(dir, "team.test.yaml"))).toBe(false);
  });

  it("an unknown kind is a usage error naming the kinds", async () => {
    const r = await runCli(["init", join(tempDir(), "x"), "--kind", "reactive"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("unknown kind 'reactive': expected one of react, plan_and_solve, plan_and_solve_flow, plan_solver, sop");
  });
});
