/** Problems found after a test file was read (an unknown agent, a missing recording), located in its text. */
import { readFile } from "node:fs/promises";
import { parseTeamText } from "../config/parse.js";
import type { ConfigProblem } from "../errors.js";

/** A problem at `pointer` of the test file `file`, with its line and column. */
export async function problemAt(file: string, pointer: string, message: string): Promise<ConfigProblem> {
  try {
    const text = (await readFile(file, "utf8")).replace(/^\uFEFF/, "");
    return parseTeamText(text, file, {}, { interpolate: false }).source.problem(pointer, message);
  } catch {
    return { file, line: 1, col: 1, path: pointer, message };
  }
}
