import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { BIN, ROOT, runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";

/** Spawn the CLI and close its stdout after the first chunk, as `| head -1` does. */
function runAndCloseStdout(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, NO_COLOR: "1" } });
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.stdout.once("data", () => child.stdout.destroy());
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stderr }));
  });
}

describe("a reader that goes away (runtime ... | head -1)", () => {
  it("exec --events ndjson finishes its run quietly, with the run's exit status and its trace", async () => {
    const dir = tempDir();
    const r = await runAndCloseStdout(["exec", "teams/circle-react.yaml", "radius 5?", "--events", "ndjson", "--trace-dir", dir]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const trace = await runCli(["trace", "--trace-dir", dir]);
    expect(trace.code).toBe(0);
    expect(trace.stdout).toMatch(/answer +A circle of radius 5 m/);
  });

  it("schema and graph exit 0 without a stack trace", async () => {
    for (const args of [["schema"], ["graph", "--machine", "react"]]) {
      const r = await runAndCloseStdout(args);
      expect(r.stderr).not.toMatch(/\n\s+at /);
      expect(r.code).toBe(0);
    }
  });
});
