/**
 * The bundles of dist/vendor load with the V8 code cache the build wrote
 * beside them (src/built.ts, scripts/bundle-vendor.mjs), and only with a
 * cache made from the same text at the same path, whose data is whole: V8
 * itself checks little more than lengths, so a stale cache would run old
 * code, a moved one would name the build's path in stack traces, and a
 * damaged one of the right length crashes the process.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { codeCacheFile, compileBundle, loadBundle, runBundle, writeCodeCache } from "../../src/built.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "bundle-cache-"));
  dirs.push(dir);
  return dir;
};

/** A one-line bundle and its code cache (taken after its export ran, as the build exercises yaml). */
function bundleWithCache(source: string, dir = tempDir()): string {
  const file = join(dir, "tiny.cjs");
  writeFileSync(file, source);
  const script = compileBundle(source, file);
  const exported = runBundle(script, file);
  if (typeof exported === "function") exported();
  writeCodeCache(file, source, script);
  return file;
}

/** The data V8 would be given: the cache file past its header line. */
const cacheData = (file: string) => {
  const cache = readFileSync(codeCacheFile(file));
  return { cache, data: cache.subarray(cache.indexOf(0x0a) + 1) };
};

/** `loadBundle(file)` in a fresh process (its module cache empty, and a crash its own): the value of `expression` on the exports. */
function loadInChild(file: string, expression: string): string {
  const program = `const { loadBundle } = await import(${JSON.stringify(join(ROOT, "dist/built.js"))}); const m = loadBundle(${JSON.stringify(file)}); process.stdout.write(String(${expression}));`;
  return execFileSync(process.execPath, ["--input-type=module", "-e", program], { encoding: "utf8" });
}

describe("bundles and their code cache", () => {
  it.each(["yaml", "xstate", "commander"])("the build's %s bundle comes with a code cache this Node accepts", (name) => {
    const file = join(ROOT, `dist/vendor/${name}.cjs`);
    const { data } = cacheData(file);
    const script = compileBundle(readFileSync(file, "utf8"), file, data);
    expect(script.cachedDataRejected).toBe(false);
    expect(loadInChild(file, "Object.keys(m).length > 3")).toBe("true");
  });

  it("runs the bundle's own text when its cache was made from another text of the same length (V8 would run the old code)", () => {
    const file = bundleWithCache(`module.exports = () => "old";`);
    expect(loadInChild(file, "m()")).toBe("old");
    writeFileSync(file, `module.exports = () => "new";`);
    expect(loadInChild(file, "m()")).toBe("new");
  });

  it("does not use a cache made at another path: stack traces name the file loaded", () => {
    const built = bundleWithCache(`module.exports = () => new Error("here").stack;`);
    const moved = join(tempDir(), "tiny.cjs");
    copyFileSync(built, moved);
    copyFileSync(codeCacheFile(built), codeCacheFile(moved));
    expect(loadInChild(moved, "m()")).toContain(moved);
  });

  it("survives a cache damaged without changing its length (V8 does not check its data: the process crashed)", () => {
    const file = bundleWithCache(`module.exports = { f: (x) => [x, x * 2, String(x)].join(",") }; module.exports.f(1);`);
    const { cache, data } = cacheData(file);
    const at = cache.length - data.length + (data.length >> 1);
    for (let i = 0; i < 64 && at + i < cache.length; i++) cache[at + i]! ^= 0xff;
    writeFileSync(codeCacheFile(file), cache);
    expect(loadInChild(file, "m.f(3)")).toBe("3,6,3");
  });

  it("loads without a cache, with a damaged one, once per process, and says a missing bundle is absent", () => {
    const dir = join(tempDir(), "nested");
    mkdirSync(dir);
    const file = bundleWithCache(`module.exports = { answer: 42, loaded: Math.random() };`, dir);
    const { cache } = cacheData(file);
    writeFileSync(codeCacheFile(file), Buffer.concat([cache.subarray(0, 40), Buffer.from("not V8's data")]));
    const first = loadBundle(file) as { answer: number; loaded: number };
    expect(first.answer).toBe(42);
    expect(loadBundle(file)).toBe(first);
    rmSync(codeCacheFile(file));
    expect(loadInChild(file, "m.answer")).toBe("42");
    expect(loadBundle(join(dir, "missing.cjs"))).toBeUndefined();
  });
});
