/** Which test files `runtime test` runs: those named, and the `*.test.yaml` under the folders named. */
import { readdir, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { RuntimeError } from "../errors.js";

/** Names of test files. */
export const TEST_FILE = /\.test\.ya?ml$/;

/**
 * Test files for `paths` (files kept as given, folders searched, in name
 * order), skipping node_modules and hidden folders; a path that does not
 * exist is a usage error.
 */
export async function findTestFiles(paths: string[], cwd: string = process.cwd()): Promise<string[]> {
  const found: string[] = [];
  for (const path of paths.length > 0 ? paths : ["."]) {
    let info: Awaited<ReturnType<typeof stat>>;
    try {
      info = await stat(path);
    } catch {
      throw new RuntimeError("USAGE", `${path}: no such file or directory`);
    }
    if (info.isDirectory()) found.push(...(await walk(path)).map((file) => (paths.length > 0 ? file : relative(cwd, file) || file)));
    else found.push(path);
  }
  return [...new Set(found)];
}

async function walk(dir: string): Promise<string[]> {
  const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name));
  const out: string[] = [];
  for (const entry of entries) {
    if (entry.name === "node_modules" || entry.name.startsWith(".")) continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(path)));
    else if (entry.isFile() && TEST_FILE.test(entry.name)) out.push(path);
  }
  return out;
}
