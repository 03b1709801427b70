import type { Command } from "commander";
import { ConfigError, describeError, formatProblem } from "../../errors.js";
import { loadCheckedTeam } from "../load-team.js";
import { EXIT, type SetExit } from "../exit.js";

/** `runtime validate FILE...`: every problem of every file, one per line on stderr. */
export function registerValidate(program: Command, setExit: SetExit): void {
  program
    .command("validate")
    .description("check team files: each problem on stderr as FILE:LINE:COL PATH MESSAGE; exit 0 if all are valid, 2 otherwise")
    .argument("<file...>", "team files (YAML)")
    .option("--strict", "treat warnings (the lint for excessive agency, docs/security.md) as errors: exit 2")
    .action(async (files: string[], options: { strict?: boolean }) => {
      let valid = true;
      for (const file of files) {
        try {
          const team = await loadCheckedTeam(file, { modules: true });
          // Warnings do not make a file invalid unless --strict: they are said, and the exit status stays 0.
          const warnings = team.warnings ?? [];
          process.stderr.write(warnings.map((p) => `${formatProblem(p)}\n`).join(""));
          if (options.strict && warnings.length > 0) {
            valid = false;
            process.stderr.write(`${file}: ${warnings.length} warning(s), which --strict makes errors\n`);
          } else process.stdout.write(`${file}: ok\n`);
        } catch (err) {
          valid = false;
          const problems = err instanceof ConfigError ? err.problems : [{ file, line: 1, col: 1, path: "", message: describeError(err) }];
          process.stderr.write(problems.map((p) => `${formatProblem(p)}\n`).join(""));
        }
      }
      setExit(valid ? EXIT.OK : EXIT.USAGE);
    });
}
