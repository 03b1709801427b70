import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** A fresh temporary directory for one test's team files and traces. */
export function tempDir(prefix = "runtime-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** Write a team file (and any side files) into a fresh directory; returns the team file's path. */
export function writeTeam(yaml: string, files: Record<string, string> = {}, dir = tempDir()): string {
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const path = join(dir, "team.yaml");
  writeFileSync(path, yaml);
  return path;
}

/** A react-protocol reply body. */
export function reactReply(action_type: string, output: Record<string, unknown>, observe = "", thought = ""): string {
  return JSON.stringify({ observe, thought, action: { result: { action_type, output } } });
}
