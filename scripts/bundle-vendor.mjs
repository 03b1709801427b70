#!/usr/bin/env node
/**
 * Part of `npm run build`: writes the `yaml` package as one CommonJS file,
 * dist/vendor/yaml.cjs, bundled by esbuild from the installed package. Its
 * own entry is 72 modules that cost `validate` and `exec` 32-48 ms to load;
 * the bundle, the same code, 9-16 ms. src/built.ts (`lazilyBundled`) loads it,
 * or the package itself when running from the sources.
 */
import { buildSync } from "esbuild";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const root = join(dirname(fileURLToPath(import.meta.url)), "..");

for (const name of ["yaml"]) {
  const entry = require.resolve(name);
  const { version, license } = JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8"));
  buildSync({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "cjs",
    target: "node20",
    outfile: join(root, "dist", "vendor", `${name}.cjs`),
    banner: { js: `/* ${name} ${version} (${license}), bundled by scripts/bundle-vendor.mjs from node_modules/${name} */` },
    logLevel: "warning",
  });
}
