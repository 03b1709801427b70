import { readFile } from "node:fs/promises";
import type { Command } from "commander";
import { TEAM_SCHEMA_URL } from "../../config/schema.js";
import { EXIT, type SetExit } from "../main.js";

/** `runtime schema`: the JSON Schema of team.yaml on stdout. */
export function registerSchema(program: Command, setExit: SetExit): void {
  program
    .command("schema")
    .description("print the JSON Schema (2020-12) of team.yaml")
    .action(async () => {
      process.stdout.write(await readFile(TEAM_SCHEMA_URL, "utf8"));
      setExit(EXIT.OK);
    });
}
