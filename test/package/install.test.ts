/**
 * The package as a user installs it (docs/cli.md#the-package): `npm pack` of
 * the built project, installed into a new project with npm, then its
 * `runtime` command run through npx, and a TypeScript consumer of the
 * library compiled with `skipLibCheck: false` (so the published types must
 * need no type package that is only a devDependency here) and run.
 *
 * The new project installs offline from npm's cache, which the project's own
 * `npm ci` filled, with a lockfile of the project's locked production
 * dependencies (npm needs the registry's package lists to resolve without
 * one). better-sqlite3's install script is skipped and its binary, built by
 * that same `npm ci` for this Node, copied in: compiling SQLite again costs
 * minutes and tests better-sqlite3, not this package.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const MODULES = join(ROOT, "node_modules");
const QUESTION = "What are the area and circumference of a circle with radius 5 meters?";
/** Generous: every step waits on npm or a compiler, on a loaded machine. */
const STEP_MS = 600_000;

/** Run a command to its end; its stdout, or an error with its stderr. npm's own variables stay out, so the nested npm reads the new project. */
function run(command: string, args: string[], cwd: string): Promise<string> {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key)));
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env: { ...env, NO_COLOR: "1" }, timeout: STEP_MS, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command} ${args.join(" ")} failed (${err.code ?? err.signal}):\n${stderr}\n${stdout}`));
      else resolve(stdout);
    });
  });
}

interface LockEntry {
  dev?: boolean;
  [key: string]: unknown;
}

/** The new project's lockfile: the package from its tarball, and the project's locked production dependencies. */
function lockfile(tarball: string, tarballBytes: Buffer): string {
  const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string; dependencies: Record<string, string>; bin: unknown };
  const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };
  const production = Object.entries(lock.packages).filter(([path, entry]) => path !== "" && !entry.dev);
  const spec = `file:${tarball}`;
  return JSON.stringify({
    name: "consumer",
    version: "1.0.0",
    lockfileVersion: 3,
    requires: true,
    packages: {
      "": { name: "consumer", version: "1.0.0", dependencies: { "yaml-agent-runtime": spec } },
      "node_modules/yaml-agent-runtime": {
        version: pkg.version,
        resolved: spec,
        integrity: `sha512-${createHash("sha512").update(tarballBytes).digest("base64")}`,
        dependencies: pkg.dependencies,
        bin: pkg.bin,
      },
      ...Object.fromEntries(production),
    },
  });
}

const CONSUMER = `import { defineTool, loadTeam, runTeam, type RunEvent, type RunResult } from "yaml-agent-runtime";
import type * as server from "yaml-agent-runtime/server";

const lookup = defineTool<{ topic: string }>({
  name: "lookup",
  description: "Look up a formula by topic.",
  parameters: { type: "object", properties: { topic: { type: "string" } }, required: ["topic"] },
  effect: "read",
  async execute({ topic }) {
    return { topic, formula: "pi * r^2" };
  },
});

export type Server = typeof server;
const team = await loadTeam(process.argv[2] ?? "team.yaml", { tools: [lookup] });
const run = runTeam(team, { input: ${JSON.stringify(QUESTION)}, tools: [lookup] });
const types: RunEvent["type"][] = [];
for await (const event of run.events) types.push(event.type);
const result: RunResult = await run.result;
console.log(JSON.stringify({ result_type: result.result_type, answer: result.answer, last: types.at(-1) }));
`;

const TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "nodenext",
    moduleResolution: "nodenext",
    strict: true,
    skipLibCheck: false,
    types: ["node"],
    outDir: "out",
  },
  files: ["consumer.ts"],
};

describe("the package, installed", () => {
  let dir: string;
  let app: string;
  let team: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "runtime-package-"));
    app = join(dir, "app");
    mkdirSync(app);
    // The built package (`npm run build`, which `npm test` runs first), as the registry would get it.
    const packed = JSON.parse(await run("npm", ["pack", "--json", "--pack-destination", dir], ROOT)) as { filename: string }[];
    const tarball = join(dir, packed[0]?.filename ?? "");
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({ name: "consumer", version: "1.0.0", private: true, type: "module", dependencies: { "yaml-agent-runtime": `file:${tarball}` } }),
    );
    writeFileSync(join(app, "package-lock.json"), lockfile(tarball, readFileSync(tarball)));
    await run("npm", ["ci", "--offline", "--ignore-scripts", "--no-audit", "--no-fund"], app);
    cpSync(join(MODULES, "better-sqlite3/build/Release/better_sqlite3.node"), join(app, "node_modules/better-sqlite3/build/Release/better_sqlite3.node"));
    team = join(app, "node_modules/yaml-agent-runtime/teams/circle-react.yaml");
  }, STEP_MS);

  // Removes the symlinks below, never what they point to.
  afterAll(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined), STEP_MS);

  // What the type check below relies on: no devDependency (@types/pg, @types/better-sqlite3) arrives through a production one.
  it("the install holds none of the devDependencies", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { devDependencies: Record<string, string> };
    // Those the project's lock marks dev-only: @types/node, say, also comes with a production dependency (protobufjs, under @google/genai).
    const own = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as { packages: Record<string, { dev?: boolean }> };
    const devOnly = Object.keys(pkg.devDependencies).filter((name) => own.packages[`node_modules/${name}`]?.dev === true);
    expect(devOnly).toContain("@types/pg");
    const lock = JSON.parse(readFileSync(join(app, "package-lock.json"), "utf8")) as { packages: Record<string, unknown> };
    expect(devOnly.filter((name) => `node_modules/${name}` in lock.packages)).toEqual([]);
    expect(Object.keys(lock.packages)).toContain("node_modules/better-sqlite3");
  });

  it("npx runtime validate and exec run an example team on the scripted model", { timeout: STEP_MS }, async () => {
    expect(await run("npx", ["--offline", "runtime", "validate", team], app)).toContain("circle-react.yaml: ok");
    const answer = await run("npx", ["--offline", "runtime", "exec", team, QUESTION], app);
    expect(answer).toContain("an area of 78.54 m²");
    expect(answer).toContain("a circumference of 31.42 m");
  });

  it("a TypeScript consumer of loadTeam, runTeam and defineTool compiles with skipLibCheck false, and runs", { timeout: STEP_MS }, async () => {
    // A Node project's own types: @types/node (and its undici-types), nothing else from here.
    mkdirSync(join(app, "node_modules/@types"), { recursive: true });
    for (const name of ["@types/node", "undici-types"]) {
      // Installed already where a production dependency brings them.
      if (!existsSync(join(app, "node_modules", name))) symlinkSync(join(MODULES, name), join(app, "node_modules", name));
    }
    writeFileSync(join(app, "consumer.ts"), CONSUMER);
    writeFileSync(join(app, "tsconfig.json"), JSON.stringify(TSCONFIG));
    await run(process.execPath, [join(MODULES, "typescript/bin/tsc"), "-p", app], app);
    const out = JSON.parse(await run(process.execPath, [join(app, "out/consumer.js"), team], app)) as Record<string, unknown>;
    expect(out).toEqual({ result_type: "answer", answer: expect.stringContaining("78.54 m²"), last: "run.finished" });
  });
});
