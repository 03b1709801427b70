/**
 * Compile the Plan Tool alone (it imports only core types) into a scratch
 * directory inside node_modules/.cache, so child processes can import real
 * JavaScript without depending on a full `npm run build` of the tree.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Compiles into a fresh directory; returns it and the absolute path of `plan/plan-tool.js` in it. */
export function compilePlanTool(): { dir: string; module: string } {
  const cache = join(ROOT, "node_modules", ".cache");
  mkdirSync(cache, { recursive: true });
  const out = mkdtempSync(join(cache, "plan-test-"));
  execFileSync(
    process.execPath,
    [
      join(ROOT, "node_modules", "typescript", "bin", "tsc"),
      "--outDir",
      out,
      "--rootDir",
      join(ROOT, "src"),
      "--module",
      "NodeNext",
      "--moduleResolution",
      "NodeNext",
      "--target",
      "ES2022",
      "--strict",
      "--skipLibCheck",
      "--esModuleInterop",
      "--types",
      "node",
      join(ROOT, "src", "store", "sqlite", "store.ts"),
    ],
    { cwd: ROOT, stdio: "pipe" },
  );
  return { dir: out, module: join(out, "store", "sqlite", "store.js") };
}

/** A child script of this folder, by file name. */
export function child(name: string): string {
  return fileURLToPath(new URL(`../plan/children/${name}`, import.meta.url));
}
