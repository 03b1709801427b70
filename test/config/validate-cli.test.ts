import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runCli, type CliResult } from "../support/cli.js";
import { tempDir } from "../support/team.js";
import { BAD_CASES, BASE } from "../support/bad-team-files.js";

/** Problems of one file in `runtime validate` stderr, without the `FILE:` prefix. */
function problemsOf(stderr: string, file: string): string[] {
  return stderr
    .split("\n")
    .filter((line) => line.startsWith(`${file}:`))
    .map((line) => line.slice(file.length + 1));
}

describe("runtime validate on bad files", () => {
  let dir: string;
  let result: CliResult;

  beforeAll(async () => {
    dir = tempDir("runtime-config-bad-");
    mkdirSync(join(dir, "prompts"));
    writeFileSync(join(dir, "script.yaml"), "version: 1\nreplies: []\n");
    for (const c of BAD_CASES) writeFileSync(join(dir, `${c.name}.yaml`), c.text);
    // All files in one process: the problems of each are told apart by their FILE prefix.
    result = await runCli(["validate", ...BAD_CASES.map((c) => join(dir, `${c.name}.yaml`))], {
      env: { RUNTIME_TEST_SURELY_UNSET_KEY: undefined },
    });
  });

  it("exits 2 and reports no bad file as ok", () => {
    expect(BAD_CASES.length).toBeGreaterThanOrEqual(15);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    for (const line of result.stderr.trim().split("\n")) {
      expect(line).toMatch(/^\/\S+\.yaml:\d+:\d+ \/\S* .+$/);
    }
  });

  it.each(BAD_CASES.map((c) => [c.name, c] as const))("%s: exact line, column, pointer and message", (_name, c) => {
    const file = join(dir, `${c.name}.yaml`);
    expect(problemsOf(result.stderr, file)).toEqual(c.expect.map((line) => line.replaceAll("$DIR", dir)));
  });

  it("a missing file is a problem, not a crash, and other files are still checked", async () => {
    const missing = join(dir, "no-such-team.yaml");
    const r = await runCli(["validate", missing, "teams/circle-react.yaml"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(`${missing}:1:1 / file not found\n`);
    expect(r.stdout).toBe("teams/circle-react.yaml: ok\n");
  });

  it("checks the scripted model's script too: validate and exec exit 2 and point into the script", async () => {
    const scripts = tempDir("runtime-config-script-");
    writeFileSync(join(scripts, "script.yaml"), "version: 1\nreplies:\n  - { contnt: hi }\n");
    const team = join(scripts, "team.yaml");
    writeFileSync(team, BASE);
    const r = await runCli(["validate", team]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe(`${join(scripts, "script.yaml")}:3:7 /replies/0/contnt scripted model: unknown key 'contnt' (did you mean 'content'?)\n`);
    const exec = await runCli(["exec", team, "hi", "--trace-dir", scripts]);
    expect(exec.code).toBe(2);
    expect(exec.stderr).toBe(r.stderr);
  });

  it("validate without a file is a usage error", async () => {
    const r = await runCli(["validate"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("missing required argument 'file'");
  });
});

describe("runtime validate on the example teams", () => {
  const teams = readdirSync("teams")
    .filter((f) => f.endsWith(".yaml") && !f.endsWith(".test.yaml")) // *.test.yaml are agent tests (docs/testing.md)
    .map((f) => `teams/${f}`)
    .sort();

  it("every file in teams/ is valid, well under a second", async () => {
    expect(teams.length).toBeGreaterThanOrEqual(5);
    const r = await runCli(["validate", ...teams]);
    console.log(`runtime validate teams/*.yaml (${teams.length} files): ${r.ms} ms wall, process spawn included`);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(teams.map((t) => `${t}: ok\n`).join(""));
  });
});
