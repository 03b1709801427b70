import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/cli.js";

describe("docs/design", () => {
  it("holds each machine's diagram as runtime graph draws it today (docs/design/generate.mjs --check)", () => {
    const r = spawnSync(process.execPath, ["docs/design/generate.mjs", "--check"], { cwd: ROOT, encoding: "utf8" });
    expect(r.stderr + r.stdout, "run `node docs/design/generate.mjs` after changing a machine").not.toMatch(/out of date|error/i);
    expect(r.status).toBe(0);
  });
});
