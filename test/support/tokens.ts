/**
 * Helpers of the per-caller token tests (test/server/tokens*.test.ts): a
 * tokens file written from callers and their tokens (as their SHA-256, the
 * way an operator writes one).
 */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { tempDir } from "./team.js";

/** A caller of a tokens file; `token` is written as its `token_sha256`. */
export interface TestCaller {
  name: string;
  token?: string;
  token_env?: string;
  scopes: string[];
  runs_max?: number;
  rate?: number;
}

/** Write a tokens file (YAML) of `callers`; its path. */
export function tokensFile(callers: readonly TestCaller[]): string {
  const file = join(tempDir("tokens-"), "tokens.yaml");
  const lines = callers.map(({ token, ...rest }) => {
    const entry = { ...rest, ...(token !== undefined ? { token_sha256: createHash("sha256").update(token).digest("hex") } : {}) };
    return `- ${JSON.stringify(entry)}`;
  });
  writeFileSync(file, `${lines.join("\n")}\n`);
  return file;
}
