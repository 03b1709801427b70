import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { commandTool } from "../../src/tools/command.js";
import { CALL_MARKER_VAR, killMarked } from "../../src/tools/process-tree.js";
import { missingComponent } from "../support/components.js";
import { call, fixtureCommand, isAlive, makeBox, sleep, leftoverPids } from "../support/tools.js";

/** What setsid-sleeper.mjs records about itself. */
interface Sleeper {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  tool_pid: number;
  state_at_exit?: string;
}

const leftovers = leftoverPids();

const pidfile = (): string => join(mkdtempSync(join(tmpdir(), "tools-setsid-")), "sleeper.json");

function readSleeper(file: string): Sleeper {
  const sleeper = JSON.parse(readFileSync(file, "utf8")) as Sleeper;
  leftovers.push(sleeper.pid);
  return sleeper;
}

/** The sleeper really escaped: a session (and group) of its own, not the tool's. */
function expectEscaped(sleeper: Sleeper): void {
  expect(sleeper.sid).toBe(sleeper.pid);
  expect(sleeper.pgid).toBe(sleeper.pid);
  expect(sleeper.pgid).not.toBe(sleeper.tool_pid);
}

async function expectGoneWithin(pid: number, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (isAlive(pid) && Date.now() < until) await sleep(10);
  expect(isAlive(pid), `process ${pid} outlived the call`).toBe(false);
}

const tool = (overrides = {}) => commandTool(fixtureCommand("escaper", "setsid-grandchild.mjs", overrides));
// util-linux's setsid is required, not skipped when missing (scripts/test.sh installs it).
const vias = ["setsid", "detached"] as const;
it("finds /usr/bin/setsid (util-linux) to start grandchildren with", () => {
  expect(existsSync("/usr/bin/setsid"), missingComponent("setsid")).toBe(true);
});

describe.runIf(process.platform === "linux")("command tools end their whole process tree", () => {
  for (const via of vias) {
    it(`kill a grandchild started by ${via === "setsid" ? "/usr/bin/setsid" : "spawn({ detached: true })"} when the call finishes`, async () => {
      const file = pidfile();
      const { box } = makeBox([tool()]);
      const [outcome] = await box.run([call("escaper", { pidfile: file, via })]);
      const sleeper = readSleeper(file);
      expect(outcome!.ok).toBe(true);
      expectEscaped(sleeper);
      // Alive when the tool's own process exited: only the sweep can have ended it.
      expect((outcome!.result as Sleeper).state_at_exit).toMatch(/^[SR]$/);
      await expectGoneWithin(sleeper.pid, 10_000);
    });

    it(`kill a ${via} grandchild when the call times out`, async () => {
      const file = pidfile();
      const { box } = makeBox([tool({ timeout_ms: 800 })]);
      const started = Date.now();
      const [outcome] = await box.run([call("escaper", { pidfile: file, via, hang: true })]);
      expect(outcome).toMatchObject({ ok: false, error: "timed out after 800 ms" });
      // Ended by the timeout, not by the grandchild's minute.
      expect(Date.now() - started).toBeLessThan(20_000);
      const sleeper = readSleeper(file);
      expectEscaped(sleeper);
      await expectGoneWithin(sleeper.tool_pid, 10_000);
      await expectGoneWithin(sleeper.pid, 10_000);
    });
  }

  it("kill a setsid grandchild when the call fails with a non-zero exit", async () => {
    const file = pidfile();
    const { box } = makeBox([tool()]);
    const [outcome] = await box.run([call("escaper", { pidfile: file, exit_code: 3 })]);
    expect(outcome!.ok).toBe(false);
    expect(outcome!.error).toMatch(/^command exited with code 3: /);
    const sleeper = readSleeper(file);
    expectEscaped(sleeper);
    await expectGoneWithin(sleeper.pid, 10_000);
  });

  it("kill a setsid grandchild when the step is aborted", async () => {
    const controller = new AbortController();
    const file = pidfile();
    const { box } = makeBox([tool()], ["escaper"], controller.signal);
    const running = box.run([call("escaper", { pidfile: file, hang: true })]);
    for (let i = 0; i < 400 && !existsSync(file); i++) await sleep(25);
    const sleeper = readSleeper(file);
    expectEscaped(sleeper);
    expect(isAlive(sleeper.pid)).toBe(true);
    controller.abort();
    const [outcome] = await running;
    expect(outcome).toMatchObject({ ok: false, error: "aborted" });
    await expectGoneWithin(sleeper.pid, 10_000);
  });

  it("kill the survivor of a daemon's double fork (setsid, then the middle process exits)", async () => {
    const file = pidfile();
    const { box } = makeBox([tool()]);
    const [outcome] = await box.run([call("escaper", { pidfile: file, levels: 2 })]);
    const sleeper = readSleeper(file);
    expect(outcome!.ok).toBe(true);
    expectEscaped(sleeper);
    expect((outcome!.result as Sleeper).state_at_exit).toMatch(/^[SR]$/);
    await expectGoneWithin(sleeper.pid, 10_000);
  });

  it("do not wait for a setsid grandchild holding stdout open", async () => {
    const file = pidfile();
    const { box } = makeBox([tool()]);
    const started = Date.now();
    const [outcome] = await box.run([call("escaper", { pidfile: file, hold_stdout: true })]);
    const sleeper = readSleeper(file);
    // Without the sweep the call would wait for the sleeper's minute (here: time out).
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome!.ok).toBe(true);
    expectEscaped(sleeper);
    await expectGoneWithin(sleeper.pid, 10_000);
  });

  it("leave the processes of another call alone while it runs", async () => {
    const longFile = pidfile();
    const shortFile = pidfile();
    const { box } = makeBox([tool()]);
    const [long, short] = await box.run([call("escaper", { pidfile: longFile, linger_ms: 1500 }, "long"), call("escaper", { pidfile: shortFile }, "short")]);
    const longSleeper = readSleeper(longFile);
    const shortSleeper = readSleeper(shortFile);
    expect(short!.ok).toBe(true);
    // The short call ended (and swept) long before the long one looked at its sleeper.
    expect((long!.result as Sleeper).state_at_exit).toMatch(/^[SR]$/);
    await expectGoneWithin(longSleeper.pid, 10_000);
    await expectGoneWithin(shortSleeper.pid, 10_000);
  });
});

describe.runIf(process.platform === "linux")("killMarked", () => {
  it("kills the processes whose environment holds the exact entry, and no others", async () => {
    const value = randomUUID();
    const start = (marker: string) => {
      const child = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)"], {
        env: { PATH: process.env.PATH ?? "", [CALL_MARKER_VAR]: marker },
        stdio: "ignore",
      });
      leftovers.push(child.pid!);
      return child;
    };
    const marked = start(value);
    const longer = start(`${value}-other`);
    const shorter = start(value.slice(0, -1));
    await sleep(200);
    const killed = killMarked(`${CALL_MARKER_VAR}=${value}`);
    expect(killed).toEqual([marked.pid]);
    await new Promise((r) => marked.once("exit", r));
    expect(isAlive(longer.pid!)).toBe(true);
    expect(isAlive(shorter.pid!)).toBe(true);
  });
});
