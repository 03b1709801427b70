import { existsSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { basename, dirname, join, parse, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import type { Command } from "commander";
import { describeError } from "../../errors.js";
import { EXIT, type SetExit } from "../exit.js";

/** The kinds `runtime init` has a template for (templates/init/<kind>/ in the package). */
const KINDS = ["react", "plan_and_solve", "plan_and_solve_flow", "plan_solver", "sop"] as const;

/** The package's templates; the same path from src/ and dist/. */
const TEMPLATES = fileURLToPath(new URL("../../../templates/init/", import.meta.url));
const SCHEMAS = fileURLToPath(new URL("../../../schemas/", import.meta.url));
const PACKAGE = "yaml-agent-runtime";

/** `runtime init [DIR] [--kind KIND]`: a new team folder that runs offline at once. */
export function registerInit(program: Command, setExit: SetExit): void {
  program
    .command("init")
    .description("write a new team folder (team.yaml, a prompt, a scripted model, a tool, a test) that runs offline at once; never overwrites a file")
    .argument("[dir]", "the folder to write into (created if missing)", ".")
    .option("-k, --kind <kind>", `the entry agent's kind: ${KINDS.join(" | ")}`, "react")
    .action(async (dir: string, opts: { kind: string }) => {
      setExit(await init(dir, opts.kind));
    });
}

async function init(dir: string, kind: string): Promise<number> {
  const fail = (message: string) => {
    process.stderr.write(`runtime init: ${message}\n`);
    return EXIT.USAGE;
  };
  if (!(KINDS as readonly string[]).includes(kind)) return fail(`unknown kind '${kind}': expected one of ${KINDS.join(", ")}`);
  const target = resolve(dir);
  if (existsSync(target) && !(await isDirectory(target))) return fail(`${dir} exists and is not a folder`);

  // The kind's own files win over the common ones of the same name.
  const files = new Map<string, string>();
  try {
    for (const folder of ["common", kind]) {
      for (const file of await listFiles(join(TEMPLATES, folder))) files.set(relative(join(TEMPLATES, folder), file), file);
    }
  } catch (err) {
    return fail(`the package's templates cannot be read (${describeError(err)})`);
  }
  const taken = [...files.keys()].filter((name) => existsSync(join(target, name)));
  if (taken.length > 0) {
    return fail(`refusing to overwrite existing files in ${dir}: ${taken.sort().join(", ")} (choose an empty folder, or move them)`);
  }

  const name = teamName(target);
  for (const [name_, source] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    let text = await readFile(source, "utf8");
    if (name_ === "team.yaml") text = `${schemaComment(target, "team.schema.json")}\n${name ? text.replace(/^name: .*$/m, `name: ${name}`) : text}`;
    if (name_.endsWith(".test.yaml")) text = `${schemaComment(target, "agent-test.schema.json")}\n${text}`;
    const out = join(target, name_);
    await mkdir(dirname(out), { recursive: true });
    // `wx`: a file that appeared since the check above is still not overwritten.
    try {
      await writeFile(out, text, { encoding: "utf8", flag: "wx" });
    } catch (err) {
      return fail(`cannot write ${join(dir, name_)}: ${describeError(err)}`);
    }
  }

  const team = join(dir, "team.yaml");
  const quoted = (path: string) => (/^[\w./-]+$/.test(path) ? path : JSON.stringify(path));
  process.stdout.write(
    `Wrote a ${kind} team in ${dir}: ${[...files.keys()].sort().join(", ")}\n\n` +
      `Next:\n` +
      `  runtime validate ${quoted(team)}\n` +
      `  runtime exec ${quoted(team)} "${EXAMPLE_INPUT}"\n` +
      `  runtime test ${quoted(dir)}\n\n` +
      `It runs offline on the scripted model (scripts/replies.yaml). For a real model, replace the\n` +
      `models: block of team.yaml with an OpenAI-compatible endpoint and set OPENAI_API_KEY:\n\n` +
      `  models:\n` +
      `    default:\n` +
      `      provider: openai\n` +
      `      model: gpt-4o-mini\n` +
      `      base_url: \${OPENAI_BASE_URL:-https://api.openai.com/v1}\n` +
      `      api_key: \${OPENAI_API_KEY}\n\n` +
      `then record its replies for the tests: runtime test ${quoted(dir)} --record\n`,
  );
  return EXIT.OK;
}

/** The question every template's scripted replies answer. */
const EXAMPLE_INPUT = "How many words and characters are in: the quick brown fox jumps over the lazy dog?";

/**
 * `# yaml-language-server: $schema=...` for a file in `dir`: the relative path
 * to this package's schema, or, when there is none (another drive), its path
 * inside a project's node_modules.
 */
function schemaComment(dir: string, schema: string): string {
  const file = join(SCHEMAS, schema);
  const path = parse(dir).root === parse(file).root ? relative(dir, file).split(sep).join("/") : `./node_modules/${PACKAGE}/schemas/${schema}`;
  return `# yaml-language-server: $schema=${path}`;
}

/** The folder's name as a team name, when it is one (letters, digits, '_' and '-'). */
function teamName(dir: string): string | undefined {
  const name = basename(dir)
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/^[^A-Za-z_]+/, "")
    .slice(0, 64);
  return name.length > 0 ? name : undefined;
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await listFiles(path)));
    else if (entry.isFile()) out.push(path);
  }
  return out;
}

async function isDirectory(path: string): Promise<boolean> {
  const { stat } = await import("node:fs/promises");
  return (await stat(path)).isDirectory();
}
