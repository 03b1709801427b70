import { mkdtempSync, readFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { commandTool } from "../../src/tools/command.js";
import { call, fixtureCommand, isAlive, makeBox, sleep, leftoverPids } from "../support/tools.js";

const LOOKUP = join(dirname(fileURLToPath(import.meta.url)), "../../teams/tools/lookup.mjs");
const leftovers = leftoverPids();

describe("command tools", () => {
  it("run three calls of one reply as concurrent processes, results in call order", async () => {
    const { box } = makeBox([commandTool(fixtureCommand("nap", "sleep.mjs"))]);
    const outcomes = await box.run([call("nap", { ms: 400 }, "a"), call("nap", { ms: 200 }, "b"), call("nap", { ms: 400 }, "c")]);
    expect(outcomes.map((o) => [o.call_id, o.ok, (o.result as { slept: number }).slept])).toEqual([
      ["a", true, 400],
      ["b", true, 200],
      ["c", true, 400],
    ]);
    // Every process was asleep before any of them woke up: concurrent, whatever the machine's load
    // (in series, each would start after the previous one ended).
    const naps = outcomes.map((o) => o.result as { started: number; ended: number; pid: number });
    expect(Math.max(...naps.map((n) => n.started))).toBeLessThan(Math.min(...naps.map((n) => n.ended)));
    expect(new Set(naps.map((n) => n.pid)).size).toBe(3);
  });

  it("pass the JSON arguments on stdin, a clean environment, and the configured cwd and env", async () => {
    process.env.SECRET_FROM_PARENT = "must-not-leak";
    try {
      const tool = commandTool(fixtureCommand("echo", "echo.mjs", { env: { GREETING: "hello" } }));
      const { box } = makeBox([tool]);
      const [json, text] = await box.run([call("echo", { text: "hi", n: [1, 2] }), call("echo", { plain: true, text: "hi" })]);
      expect(json!.result).toEqual({
        args: { text: "hi", n: [1, 2] },
        cwd: fixtureCommand("x", "x").cwd,
        env: { GREETING: "hello", SECRET: null },
      });
      expect(text).toMatchObject({ ok: true, result: "plain text for hi" });
    } finally {
      delete process.env.SECRET_FROM_PARENT;
    }
  });

  it("kill the whole process group on timeout, grandchildren included", async () => {
    const dir = mkdtempSync(join(tmpdir(), "tools-pg-"));
    const pidfile = join(dir, "pids.json");
    const { box } = makeBox([commandTool(fixtureCommand("forker", "fork-grandchild.mjs", { timeout_ms: 800 }))]);
    const started = Date.now();
    const [outcome] = await box.run([call("forker", { pidfile })]);
    expect(outcome).toMatchObject({ ok: false, error: "timed out after 800 ms" });
    // Ended by the timeout, not by waiting out the grandchild's minute: a bound that only catches a hang.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(existsSync(pidfile)).toBe(true);
    const { child, grandchild } = JSON.parse(readFileSync(pidfile, "utf8")) as { child: number; grandchild: number };
    leftovers.push(child, grandchild);
    for (let i = 0; i < 400 && (isAlive(child) || isAlive(grandchild)); i++) await sleep(25);
    expect(isAlive(child)).toBe(false);
    expect(isAlive(grandchild)).toBe(false);
  });

  it("stop a process whose output exceeds the cap", async () => {
    const tool = commandTool(fixtureCommand("flood", "flood.mjs", { max_output_bytes: 1000 }));
    const { box } = makeBox([tool]);
    const started = Date.now();
    const [outcome, small] = await box.run([call("flood", { bytes: 200_000, linger_ms: 30_000 }), call("flood", { bytes: 10 })]);
    // Stopped at the cap, not after its 30 s linger.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome).toMatchObject({ ok: false, error: "output exceeded 1000 bytes; the command was stopped" });
    expect(small).toMatchObject({ ok: true, result: "xxxxxxxxxx" });
  });

  it("report a non-zero exit with its code and the last lines of stderr", async () => {
    const { box } = makeBox([commandTool(fixtureCommand("fail", "fail.mjs"))]);
    const [outcome] = await box.run([call("fail", { code: 3 })]);
    expect(outcome!.ok).toBe(false);
    expect(outcome!.error).toMatch(/^command exited with code 3: diagnostic line 5 \| .* \| fatal: could not open the widget \(code 3\)$/);
    expect(outcome!.error).not.toContain("diagnostic line 4");
  });

  it("report a program that cannot start", async () => {
    const tool = commandTool(fixtureCommand("ghost", "x", { command: ["definitely-not-a-program-4711"] }));
    const { box } = makeBox([tool]);
    const [outcome] = await box.run([call("ghost", {})]);
    expect(outcome!.ok).toBe(false);
    expect(outcome!.error).toContain('cannot start "definitely-not-a-program-4711"');
    expect(outcome!.error).toContain("ENOENT");
  });

  it("are aborted with their process group when the step is cancelled", async () => {
    const controller = new AbortController();
    const dir = mkdtempSync(join(tmpdir(), "tools-abort-"));
    const pidfile = join(dir, "pids.json");
    const { box } = makeBox([commandTool(fixtureCommand("forker", "fork-grandchild.mjs"))], ["forker"], controller.signal);
    const running = box.run([call("forker", { pidfile })]);
    for (let i = 0; i < 200 && !existsSync(pidfile); i++) await sleep(25);
    const { child, grandchild } = JSON.parse(readFileSync(pidfile, "utf8")) as { child: number; grandchild: number };
    leftovers.push(child, grandchild);
    expect(isAlive(grandchild)).toBe(true);
    controller.abort();
    const [outcome] = await running;
    expect(outcome).toMatchObject({ ok: false, error: "aborted" });
    for (let i = 0; i < 400 && (isAlive(child) || isAlive(grandchild)); i++) await sleep(25);
    expect(isAlive(child)).toBe(false);
    expect(isAlive(grandchild)).toBe(false);
  });
});

describe("teams/tools/lookup.mjs", () => {
  const lookup = () => commandTool(fixtureCommand("knowledge_lookup", "x", { command: [process.execPath, LOOKUP] }));

  it("answers formulas by topic and refuses unknown topics with exit 1", async () => {
    const { box } = makeBox([lookup()]);
    const [area, circumference, sphere, unknown] = await box.run([
      call("knowledge_lookup", { topic: "circle area" }),
      call("knowledge_lookup", { topic: "Circumference of a circle" }),
      call("knowledge_lookup", { topic: "sphere volume" }),
      call("knowledge_lookup", { topic: "dodecahedron" }),
    ]);
    expect(area!.result).toMatchObject({ topic: "circle area", formula: "area = pi * r^2" });
    expect(circumference!.result).toMatchObject({ formula: "circumference = 2 * pi * r" });
    expect(sphere!.result).toMatchObject({ formula: "volume = 4/3 * pi * r^3" });
    expect(unknown!.ok).toBe(false);
    expect(unknown!.error).toMatch(/^command exited with code 1: unknown topic "dodecahedron"; known topics: circle area/);
  });
});
