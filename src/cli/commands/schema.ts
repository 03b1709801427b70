import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { TEAM_SCHEMA_URL } from "../../config/schema.js";
import { schemaMarkdown } from "../../config/schema-doc.js";
import { EXIT, type SetExit } from "../main.js";

/** `runtime schema`: the JSON Schema of team.yaml on stdout. */
export function registerSchema(program: Command, setExit: SetExit): void {
  program
    .command("schema")
    .description("print the JSON Schema (2020-12) of team.yaml")
    .option("--markdown", "print the team file reference (docs/team-file.md) generated from the schema instead")
    .action(async (options: { markdown?: boolean }) => {
      process.stdout.write(options.markdown ? schemaMarkdown() : await readFile(TEAM_SCHEMA_URL, "utf8"));
      setExit(EXIT.OK);
    });
}
