/**
 * The bundles of dist/vendor load with the V8 code cache the build wrote
 * beside them (src/built.ts, scripts/bundle-vendor.mjs), and only with the
 * cache made from the same text: V8 itself checks little more than the
 * text's length, so a stale cache could run old code.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { buildStamp, codeCacheFile, compileBundle, loadBundle, runBundle } from "../../src/built.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A one-line bundle and its code cache (taken after its export ran, as the build exercises yaml), stamped as the build stamps it. */
function bundleWithCache(source: string): string {
  const dir = mkdtempSync(join(tmpdir(), "bundle-cache-"));
  dirs.push(dir);
  const file = join(dir, "tiny.cjs");
  writeFileSync(file, source);
  const script = compileBundle(source, file);
  const exported = runBundle(script, file);
  if (typeof exported === "function") exported();
  writeFileSync(codeCacheFile(file), Buffer.concat([Buffer.from(`${buildStamp(source)}\n`, "latin1"), script.createCachedData()]));
  return file;
}

describe("bundles and their code cache", () => {
  it("the build's yaml bundle comes with a code cache this Node accepts, stamped with the bundle's hash", () => {
    const file = join(ROOT, "dist/vendor/yaml.cjs");
    const source = readFileSync(file, "utf8");
    const cache = readFileSync(codeCacheFile(file));
    const stamp = `${buildStamp(source)}\n`;
    expect(cache.toString("latin1", 0, stamp.length)).toBe(stamp);
    const script = compileBundle(source, file, cache.subarray(stamp.length));
    expect(script.cachedDataRejected).toBe(false);
    const yaml = runBundle(script, file) as typeof import("yaml");
    expect(yaml.parse("a: [1, 2]")).toEqual({ a: [1, 2] });
  });

  it("runs the bundle's own text when its cache was made from another text of the same length (V8 would run the old code)", () => {
    const file = bundleWithCache(`module.exports = () => "old";`);
    expect((loadBundle(file) as () => string)()).toBe("old");
    writeFileSync(file, `module.exports = () => "new";`);
    expect((loadBundle(file) as () => string)()).toBe("new");
  });

  it("loads without a cache, with a damaged one, and says a missing bundle is absent", () => {
    const file = bundleWithCache(`module.exports = { answer: 42, dir: __dirname };`);
    const cache = readFileSync(codeCacheFile(file));
    writeFileSync(codeCacheFile(file), Buffer.concat([cache.subarray(0, 65), Buffer.from("not V8's data")]));
    expect(loadBundle(file)).toMatchObject({ answer: 42 });
    rmSync(codeCacheFile(file));
    expect(loadBundle(file)).toMatchObject({ answer: 42 });
    expect(loadBundle(join(file, "..", "missing.cjs"))).toBeUndefined();
  });
});
