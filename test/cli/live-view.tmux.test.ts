/**
 * The live view in a real terminal (tmux): `runtime exec` of every example
 * team, slowed down (each scripted reply waits `delay_ms`), read off the
 * screen while it runs and at the end. The frame always fits the window,
 * the checklist appears and progresses, nothing of the frame is left in the
 * scrollback, the answer and the summary stay. --verbose keeps the detailed
 * log; stderr to a file gets plain lines.
 */
import { cpSync, existsSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import stringWidth from "string-width";
import { parseDocument, type YAMLSeq } from "yaml";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";
import { BIN, ROOT, runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";
import type { OpenAIServer } from "../support/openai-server.js";
import { serverTeam, startScriptServer } from "../support/script-server.js";
import { TmuxTerminal } from "../support/tmux.js";

vi.setConfig({ testTimeout: 90_000 });

const CIRCLE = "What are the area and circumference of a circle with radius 5 meters?";
const EXAMPLES: Record<string, string> = {
  "circle-react": CIRCLE,
  "circle-plan": CIRCLE,
  "research-flow": CIRCLE,
  "plan-solver": "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.",
  "safety-sop": "Review: raise the boiler pressure limit from 8 to 10 bar",
  "unit-convert": "How many kilometres is 26.2 miles?",
  "mcp-files": "What are the area and circumference of the circle in the data folder?",
};
/** Teams whose checklist moves while they run (the others only show it, or have none). */
const PROGRESSING = ["circle-plan", "research-flow", "safety-sop"];
const WITH_CHECKLIST = [...PROGRESSING, "plan-solver", "circle-react"];

const DELAY_MS = 350;
/** The resize tests' replies wait longer: on a loaded machine, frames at the new size must still come before the run ends. */
const RESIZE_DELAY_MS = 800;
let slowTeams: string;
let slowerTeams: string;

/** Each reply of a script file waits `delay` ms. */
function slowScript(file: string, delay = DELAY_MS): void {
  const doc = parseDocument(readFileSync(file, "utf8"));
  for (const reply of (doc.get("replies") as YAMLSeq<{ set(k: string, v: unknown): void }>).items) reply.set("delay_ms", delay);
  writeFileSync(file, doc.toString());
}

/** A copy of teams/ whose scripted replies each wait `delay` ms, beside a node_modules (mcp-files runs its server from there). */
function slowCopy(delay = DELAY_MS): string {
  const root = tempDir("live-view-");
  cpSync(join(ROOT, "teams"), join(root, "teams"), { recursive: true });
  symlinkSync(join(ROOT, "node_modules"), join(root, "node_modules"));
  const scripts = join(root, "teams", "scripts");
  for (const name of readdirSync(scripts)) slowScript(join(scripts, name), delay);
  return join(root, "teams");
}

beforeAll(() => {
  if (!existsSync(join(ROOT, "dist/cli/main.js"))) throw new Error("build first: npm run build");
  slowTeams = slowCopy();
  slowerTeams = slowCopy(RESIZE_DELAY_MS);
});

const terminals: TmuxTerminal[] = [];
const servers: OpenAIServer[] = [];
afterEach(async () => {
  for (const t of terminals.splice(0)) t.kill();
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const sh = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

function exec(team: string, question: string, extra = "", teams = slowTeams): string {
  return `node ${sh(BIN)} exec ${sh(join(teams, `${team}.yaml`))} ${sh(question)} --trace-dir ${sh(tempDir())} ${extra}`;
}

interface Watched {
  /** Every distinct screen seen while the command ran (wrapped rows joined). */
  screens: string[][];
  term: TmuxTerminal;
}

/** Run in a terminal of width x height, capturing the screen every 40 ms until the command ends. */
async function watch(command: string, width: number, height: number, during?: (term: TmuxTerminal, screens: string[][]) => void): Promise<Watched> {
  const term = TmuxTerminal.start(command, { width, height });
  terminals.push(term);
  const screens: string[][] = [];
  const deadline = Date.now() + 60_000;
  while (!term.exited()) {
    if (Date.now() > deadline) throw new Error(`still running after 60 s:\n${term.capture().join("\n")}`);
    const screen = term.capture({ joined: true });
    if (screens.at(-1)?.join("\n") !== screen.join("\n")) screens.push(screen);
    during?.(term, screens);
    await new Promise((r) => setTimeout(r, 40));
  }
  return { screens, term };
}

/** The live frame's first line: `● 1.2s · 3 model calls · ...` (cut to the width). */
const HEADER = /^● \d+\.\ds(?: ·|…|$)/;

/** The live frame on a screen: from its header line to the last non-blank row. */
function frameOf(screen: string[]): string[] | undefined {
  const top = screen.findIndex((l) => HEADER.test(l));
  if (top < 0) return undefined;
  let end = screen.length;
  while (end > top && (screen[end - 1] ?? "").trim() === "") end--;
  return screen.slice(top, end);
}

/** The checklist's marks on a screen: `✓✓–▶○`. */
function marksOf(screen: string[]): string {
  return screen.map((l) => /^ {2}([✓▶○✗–]) /.exec(l)?.[1] ?? "").join("");
}

/** What keeps a screen from fitting the window: a row of the frame or the summary wider (joined where the terminal wrapped it; the answer may wrap), a frame taller, or two frames. */
function misfit(screen: string[], width: number, height: number): string | undefined {
  const frame = frameOf(screen) ?? [];
  const summary = screen.filter((l) => l.startsWith("✓ answered in"));
  const wide = [...frame, ...summary].find((line) => stringWidth(line) > width);
  if (wide !== undefined) return `a row wrapped: "${wide}"`;
  if (frame.length > height - 1) return `the frame takes ${frame.length} of ${height} rows`;
  if (screen.filter((l) => HEADER.test(l)).length > 1) return `more than one frame on the screen:\n${screen.join("\n")}`;
  return undefined;
}

function expectFrameFits(screen: string[], width: number, height: number, what: string): void {
  const problem = misfit(screen, width, height);
  expect(problem, problem && `${what}: ${problem}`).toBeUndefined();
}

describe("runtime exec in a terminal: the live view", () => {
  for (const [team, question] of Object.entries(EXAMPLES)) {
    it(`${team}: the frame fits 100x30 all along, ${WITH_CHECKLIST.includes(team) ? "the checklist shows and moves, " : ""}the answer and the summary stay`, async () => {
      const expected = await runCli(["exec", `teams/${team}.yaml`, question, "--trace-dir", tempDir()], { timeoutMs: 60_000 });
      expect(expected.code, expected.stderr).toBe(0);
      const { screens, term } = await watch(exec(team, question), 100, 30);
      expect(term.exitStatus()).toBe(0);

      const running = screens.filter((s) => frameOf(s));
      expect(running.length, `frames seen for ${team}`).toBeGreaterThan(2);
      for (const screen of screens) expectFrameFits(screen, 100, 30, team);
      expect(running.some((s) => s.some((l) => /^▸ \S+ \(\w+\) \d+\.\ds/.test(l)))).toBe(true);
      expect(running.some((s) => s.some((l) => /^● \d+\.\ds · [1-9]\d* model calls? · /.test(l)))).toBe(true);

      const marks = [...new Set(running.map(marksOf).filter((m) => m !== ""))];
      if (WITH_CHECKLIST.includes(team)) expect(marks.length, `${team}: no checklist seen`).toBeGreaterThan(0);
      if (PROGRESSING.includes(team)) {
        const done = marks.map((m) => [...m].filter((c) => c === "✓").length);
        expect(new Set(done).size, `${team}: the checklist never moved: ${marks.join(" | ")}`).toBeGreaterThan(1);
        expect(
          marks.some((m) => m.includes("▶")),
          `${team}: nothing in progress: ${marks.join(" | ")}`,
        ).toBe(true);
      }

      // The end: the summary and the answer; no frame left on the screen or in the scrollback.
      const all = term.history();
      expect(
        all.filter((l) => HEADER.test(l)),
        "a frame left behind",
      ).toEqual([]);
      const summary = all.filter((l) => l.startsWith("✓ answered in "));
      expect(summary).toHaveLength(1);
      expect(summary[0]).toMatch(/^✓ answered in \d+\.\ds · \d+ model calls · \d+ tool calls? · [\d,]+ tokens$/);
      // The SOP answer names its plan, whose id has the time in it.
      const stable = (text: string) => text.replace(/\b(\w+)-\d{8}T\d{6}Z-[0-9a-f]+\b/g, "$1-PLAN_ID");
      const text = stable(all.join("\n"));
      const answer = stable(expected.stdout).trim().split("\n");
      for (const line of answer) expect(text).toContain(line);
      expect(all.findIndex((l) => l.startsWith("✓ answered in "))).toBeLessThan(all.findIndex((l) => stable(l) === answer[0]));
    });
  }

  /** safety-sop at 100x30 (its replies slower), resized to width x height once a frame was seen. */
  async function resizedRun(width: number, height: number) {
    let resized = -1;
    const { screens, term } = await watch(exec("safety-sop", EXAMPLES["safety-sop"] ?? "", "", slowerTeams), 100, 30, (t, seen) => {
      if (resized < 0 && seen.some((s) => frameOf(s))) {
        t.resize(width, height);
        resized = seen.length;
      }
    });
    expect(resized).toBeGreaterThan(0);
    // A frame the program was drawing when tmux resized reaches the screen at the old width; the
    // program hears of the resize after that (SIGWINCH). From its first frame at the new size, all fit.
    const seen = screens.slice(resized + 1);
    const settled = seen.findIndex((s) => frameOf(s) && misfit(s, width, height) === undefined);
    expect(settled, `no frame fits ${width}x${height} after the resize:\n${seen.at(-1)?.join("\n")}`).toBeGreaterThanOrEqual(0);
    const after = seen.slice(settled);
    expect(after.filter((s) => frameOf(s)).length).toBeGreaterThan(1);
    for (const screen of after) expectFrameFits(screen, width, height, `after the resize to ${width}x${height}`);
    const history = term.history();
    expect(history.some((l) => l.startsWith("✓ answered in "))).toBe(true);
    return history.filter((l) => HEADER.test(l));
  }

  // A terminal rewraps (tmux: keeping the cursor's row, so rows at the top go up into the scrollback)
  // or drops rows as it shrinks, before the program hears of it: what went into the scrollback then
  // is out of reach. At most that one frame's header may stay there; the screen never holds two frames.
  it("narrower while it runs (100 → 48 columns): the next frames fit, one frame on the screen", async () => {
    expect((await resizedRun(48, 30)).length).toBeLessThanOrEqual(1);
  });

  it("shorter while it runs (30 → 12 rows): the next frames fit the 12 rows, one frame on the screen", async () => {
    expect((await resizedRun(100, 12)).length).toBeLessThanOrEqual(1);
  });

  it("a tiny window (30x6): still one frame that fits, the summary at the end", async () => {
    const { screens, term } = await watch(exec("circle-plan", CIRCLE), 30, 6);
    expect(screens.filter((s) => frameOf(s)).length).toBeGreaterThan(2);
    for (const screen of screens) expectFrameFits(screen, 30, 6, "30x6");
    expect(term.history().filter((l) => HEADER.test(l))).toEqual([]);
    expect(term.history().some((l) => l.startsWith("✓ answered in"))).toBe(true);
  });

  it("a call that needs approval: the frame steps aside while a person is asked, the questions stay, the frame comes back", async () => {
    const team = join(slowTeams, "circle-approve.yaml");
    const doc = parseDocument(readFileSync(join(slowTeams, "circle-react.yaml"), "utf8"));
    doc.setIn(["agents", "solver", "approval"], { calculator: "required" });
    writeFileSync(team, doc.toString());
    const term = TmuxTerminal.start(`node ${sh(BIN)} exec ${sh(team)} ${sh(CIRCLE)} --trace-dir ${sh(tempDir())}`, { width: 100, height: 30 });
    terminals.push(term);
    await term.waitFor((s) => s.some((l) => HEADER.test(l)));
    const asked = await term.waitFor((s) => s.some((l) => l.startsWith("Approve calculator")));
    await new Promise((r) => setTimeout(r, 300)); // time for a frame that should not come
    const still = term.capture({ joined: true });
    expect(
      still.some((l) => HEADER.test(l)),
      still.join("\n"),
    ).toBe(false);
    expect(still).toEqual(asked);
    term.sendKeys("y", "Enter");
    // The two calculator calls of one reply are asked one after the other; the frame waits for both.
    await term.waitFor((s) => s.filter((l) => l.startsWith("Approve calculator")).length === 2);
    expect(term.capture().some((l) => HEADER.test(l))).toBe(false);
    term.sendKeys("y", "Enter");
    // The last model call (DELAY_MS) runs under the frame again, below the questions.
    const back = await term.waitFor((s) => s.some((l) => HEADER.test(l)));
    expect(back.findIndex((l) => HEADER.test(l))).toBeGreaterThan(back.findLastIndex((l) => l.startsWith("Approve calculator")));
    await term.waitFor(() => term.exited());
    expect(term.exitStatus()).toBe(0);
    const history = term.history();
    expect(history.filter((l) => l.startsWith("Approve calculator"))).toEqual([
      'Approve calculator {"expression":"round(pi * 5^2, 2)"}? [y/N] y',
      'Approve calculator {"expression":"round(2 * pi * 5, 2)"}? [y/N] y',
    ]);
    expect(history.filter((l) => HEADER.test(l))).toEqual([]);
    expect(history.some((l) => l.startsWith("✓ answered in "))).toBe(true);
  });

  it("a priced model over HTTP and a team budget: tokens and cost against the budget, live and in the summary", async () => {
    // The example team's agents reach the project's OpenAI-compatible test server, which answers from its script.
    const team = serverTeam("circle-plan", "http://unused");
    slowScript(team.script);
    const server = await startScriptServer(team.script);
    servers.push(server.server);
    const wired = serverTeam("circle-plan", server.server.url);
    const doc = parseDocument(readFileSync(wired.file, "utf8"));
    const models = doc.get("models") as { items: { key: { value: string } }[] };
    for (const item of models.items) doc.setIn(["models", item.key.value, "price"], { input_per_mtok: 150, output_per_mtok: 600 });
    doc.set("budget", { max_tokens: 200_000, max_cost_usd: 5 });
    writeFileSync(wired.file, doc.toString());
    const traceDir = tempDir();
    const { screens, term } = await watch(`node ${sh(BIN)} exec ${sh(wired.file)} ${sh(CIRCLE)} --trace-dir ${sh(traceDir)}`, 100, 30);
    expect(term.exitStatus()).toBe(0);
    const costs = screens.flatMap((s) => s.filter((l) => HEADER.test(l))).map((l) => /· [\d,]+\/200,000 tokens · \$(\d+\.\d{4}) of \$5\.00$/.exec(l)?.[1]);
    expect(costs.length).toBeGreaterThan(2);
    expect(
      costs.every((c) => c !== undefined),
      costs.join(" "),
    ).toBe(true);
    expect(new Set(costs).size, "the cost never moved").toBeGreaterThan(1);
    const summary = term.history().find((l) => l.startsWith("✓ answered in "));
    expect(summary).toMatch(/ · [\d,]+\/200,000 tokens · \$\d+\.\d{4} of \$5\.00$/);
    // What the summary says the run cost is what the run's budget statement says (docs/budgets.md).
    const store = TraceStore.open(traceDir, { create: false });
    const run = store.listRuns()[0];
    const finished = store.eventsOfTask(run?.task_id ?? "").find((e) => e.type === "run.finished");
    store.close();
    const spent = finished?.type === "run.finished" ? finished.budget?.max_cost_usd?.spent : undefined;
    expect(spent).toBeGreaterThan(0);
    expect(summary).toContain(`$${spent?.toFixed(4)} of $5.00`);
  });

  it("Ctrl-C: the frame gives way to an interrupted summary and the way to resume; exit 130", async () => {
    const term = TmuxTerminal.start(exec("safety-sop", EXAMPLES["safety-sop"] ?? ""), { width: 100, height: 30 });
    terminals.push(term);
    await term.waitFor((s) => s.some((l) => /^ {2}✓ /.test(l))); // midway: a task done
    term.sendKeys("C-c");
    await term.waitFor(() => term.exited());
    const history = term.history().filter((l) => l.trim() !== "");
    expect(history.filter((l) => HEADER.test(l))).toEqual([]);
    expect(history[0], history.join("\n")).toMatch(/^✗ interrupted after \d+\.\ds · \d+ model calls · \d+ tool calls · [\d,]+ tokens$/);
    expect(term.exitStatus(), history.join("\n")).toBe(130);
    expect(history[1]).toMatch(/^runtime exec: interrupted; trace kept \(runtime trace \S+; runtime resume /);
  });

  it("--verbose keeps the detailed log: states, recursions, tool calls; no live frame", async () => {
    const { screens, term } = await watch(exec("circle-react", CIRCLE, "--verbose"), 100, 30);
    expect(screens.some((s) => frameOf(s))).toBe(false);
    const text = term.history().join("\n");
    expect(text).toMatch(/^state react: /m);
    expect(text).toMatch(/^recursion 1/m);
    expect(text).toMatch(/^tool calculator ✓/m);
    expect(text).toMatch(/^■ answer · /m);
  });

  it("--events ndjson in a terminal: one JSON event per line as before, no live frame", async () => {
    const { screens, term } = await watch(`${exec("unit-convert", EXAMPLES["unit-convert"] ?? "", "--events ndjson")} 2>/dev/null`, 100, 30);
    expect(term.exitStatus()).toBe(0);
    expect(screens.some((s) => frameOf(s))).toBe(false);
    const events = term
      .history()
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as { type: string });
    expect(events[0]?.type).toBe("run.started");
    expect(events.at(-1)?.type).toBe("run.finished");
  });

  it("stderr to a file: plain lines with --progress, nothing without; no escape codes either way", async () => {
    const dir = tempDir();
    const withProgress = join(dir, "progress.txt");
    const without = join(dir, "none.txt");
    const a = await watch(`${exec("circle-react", CIRCLE, "--progress")} 2>${sh(withProgress)}`, 100, 30);
    const b = await watch(`${exec("circle-react", CIRCLE)} 2>${sh(without)}`, 100, 30);
    expect(a.term.exitStatus()).toBe(0);
    expect(b.term.exitStatus()).toBe(0);
    const log = readFileSync(withProgress, "utf8");
    expect(log).not.toContain("\x1b");
    expect(log).toMatch(/^state react: /m);
    expect(log).toMatch(/^tool calculator ✓/m);
    expect(readFileSync(without, "utf8")).toBe("");
    // The answer alone on the screen (stdout is the terminal), as a run without a terminal gives it.
    const expected = await runCli(["exec", "teams/circle-react.yaml", CIRCLE, "--trace-dir", tempDir()]);
    expect(b.term.history().filter((l) => l.trim() !== "")).toEqual(expected.stdout.trim().split("\n"));
  });
});
