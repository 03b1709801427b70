import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { EXIT, type SetExit } from "../exit.js";

/** `runtime schema`: the JSON Schema of team.yaml on stdout. */
export function registerSchema(program: Command, setExit: SetExit): void {
  program
    .command("schema")
    .description("print the JSON Schema (2020-12) of team.yaml")
    .option("--markdown", "print the team file reference (docs/team-file.md) generated from the schema instead")
    .action(async (options: { markdown?: boolean }) => {
      // Loaded when the command runs (schema.js pulls in ajv), so `runtime --help` starts fast.
      const { TEAM_SCHEMA_URL } = await import("../../config/schema.js");
      if (options.markdown) {
        const { schemaMarkdown } = await import("../../config/schema-doc.js");
        process.stdout.write(schemaMarkdown());
      } else {
        process.stdout.write(await readFile(TEAM_SCHEMA_URL, "utf8"));
      }
      setExit(EXIT.OK);
    });
}
