/**
 * Run history and timelines (docs/server.md#run-history), in a real headless
 * Chromium: the runs list of the page with its filters, a run's tree and its
 * timeline (one bar per model and tool call), live while the run goes on;
 * `runtime trace TASK_ID --html FILE` opened from file:// with every
 * request refused; hostile text from a tool and a model shown as text.
 * Screenshots go to test-artifacts/ for a person to look at.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RunEvent } from "../../src/events/types.js";
import { TraceStore } from "../../src/trace/store.js";
import { ROOT, runCli } from "../support/cli.js";
import { tempDir, writeTeam } from "../support/team.js";
import { serveTeam } from "./support.js";

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(ROOT, "test-artifacts");

/** The calls a timeline draws: every answered or failed model call and every finished tool call. */
const callsOf = (events: RunEvent[]) => events.filter((e) => e.type === "llm.response" || e.type === "llm.error" || e.type === "tool.finished").length;

/** A react team on the scripted model whose every reply waits `delay` ms; its tool and answer carry `text`. */
function slowTeam(delay: number, text = "the area"): string {
  return writeTeam(
    `version: 1
name: slow
models:
  offline: { provider: scripted, script: ./script.yaml }
tools:
  echo:
    command: [node, ./echo.mjs]
    description: Echo a text.
    parameters: { type: object, properties: { text: { type: string } }, required: [text] }
    effect: read
agents:
  solver:
    kind: react
    tools: [calculator, echo]
`,
    {
      "echo.mjs": "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(JSON.stringify({echo: JSON.parse(s).text})));",
      "script.yaml": `version: 1
replies:
  - delay_ms: ${delay}
    content: '{"observe": "start", "thought": "compute", "action": {"result": {"action_type": "CALL_TOOL", "output": {}}}}'
    tool_calls:
      - { id: c1, name: calculator, arguments: { expression: "round(pi * 25, 2)" } }
      - { id: c2, name: echo, arguments: { text: ${JSON.stringify(text)} } }
  - delay_ms: ${delay}
    content: '{"observe": "done", "thought": "answer", "action": {"result": {"action_type": "CALL_TOOL", "output": {}}}}'
    tool_calls:
      - { id: c3, name: calculator, arguments: { expression: "round(2 * pi * 5, 2)" } }
  - delay_ms: ${delay}
    content: ${JSON.stringify(JSON.stringify({ observe: "ok", thought: "answer", action: { result: { action_type: "ANSWER", output: { answer: `Answer: ${text}` } } } }))}
`,
    },
  );
}

describe("run history and timelines in Chromium", () => {
  let context: BrowserContext;
  let profile: string;
  const closers: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (.ci/run does)`);
    mkdirSync(ARTIFACTS, { recursive: true });
    profile = mkdtempSync(join(tmpdir(), "timeline-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    });
  });
  afterAll(async () => {
    await context?.close();
    while (closers.length) await closers.pop()?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  async function open(url: string): Promise<{ page: Page; errors: string[] }> {
    const page = await context.newPage();
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    await page.goto(url);
    return { page, errors };
  }

  it("lists runs with filters, and shows a run's tree and timeline, live while it runs", async () => {
    const server = await serveTeam(slowTeam(400));
    closers.push(server);
    const { page, errors } = await open(server.pageUrl);
    await expect.poll(() => page.textContent("#team-name")).toBe("slow");

    await page.fill("#input", "Area and circumference of a circle of radius 5?");
    await page.click("#run");
    // Live: the run is listed as running, and its timeline grows while it goes on.
    await expect.poll(() => page.locator("#runs tbody tr").first().textContent(), { timeout: 10_000 }).toContain("running");
    await expect.poll(() => page.locator("#timeline .tl-bar").count(), { timeout: 10_000 }).toBeGreaterThan(0);
    const midway = await page.locator("#timeline .tl-bar").count();
    await expect.poll(() => page.textContent("#answer"), { timeout: 20_000 }).toContain("Answer: the area");
    await expect.poll(() => page.locator("#runs tbody tr").first().textContent(), { timeout: 10_000 }).toContain("answer");

    const store = TraceStore.open(server.traceDir, { create: false });
    const [run] = store.listRuns({ limit: 1 });
    const events = store.eventsOfTask(run!.task_id);
    store.close();
    const calls = callsOf(events);
    expect(calls).toBe(6); // 3 model calls, 3 tool calls
    await expect.poll(() => page.locator("#timeline .tl-bar").count()).toBe(calls);
    expect(midway).toBeLessThan(calls);
    expect(await page.locator("#timeline .tl-model").count()).toBe(3);
    expect(await page.locator("#timeline .tl-tool").count()).toBe(3);
    expect(await page.locator("#tree").textContent()).toContain("tool calculator");
    await page.screenshot({ path: join(ARTIFACTS, "timeline-live-run.png"), fullPage: true });

    // Filters: by status and by agent, through GET /v1/runs.
    await page.selectOption("#filter-status", "error");
    await expect.poll(() => page.locator("#runs tbody").textContent()).toContain("No runs.");
    await page.selectOption("#filter-status", "answer");
    await expect.poll(() => page.locator("#runs tbody tr[data-task]").count()).toBe(1);
    await page.selectOption("#filter-agent", "solver");
    await expect.poll(() => page.locator("#runs tbody tr[data-task]").count()).toBe(1);

    // Opening a run from the list shows its stored events.
    await page.goto(server.pageUrl.replace(/\?.*/, ""));
    await page.locator("#runs tbody tr[data-task]").first().click();
    await expect.poll(() => page.locator("#timeline .tl-bar").count()).toBe(calls);
    await expect.poll(() => page.textContent("#answer")).toContain("Answer: the area");
    expect(errors).toEqual([]);
  });

  it("shows hostile text from a tool and a model as text: no element made, no script run", async () => {
    const hostile = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>`;
    const server = await serveTeam(slowTeam(0, hostile));
    closers.push(server);
    const { page, errors } = await open(server.pageUrl);
    await page.fill("#input", hostile);
    await page.click("#run");
    await expect.poll(() => page.textContent("#answer"), { timeout: 20_000 }).toContain("<img src=x");
    await expect.poll(() => page.locator("#runs tbody tr[data-task]").count()).toBe(1);
    expect(await page.locator("main img, main script").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator("#runs tbody").textContent()).toContain("<img src=x");
    expect(errors).toEqual([]);
  });

  it("runtime trace TASK_ID --html writes one file that shows the same timeline offline, with no request", async () => {
    const traces = tempDir("html-trace-");
    const file = join(ROOT, "teams", "plan-solver.yaml");
    const exec = await runCli(["exec", file, "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.", "--trace-dir", traces, "--no-progress"]);
    expect(exec.code).toBe(0);
    const store = TraceStore.open(traces, { create: false });
    const [run] = store.listRuns({ limit: 1 });
    const events = store.eventsOfTask(run!.task_id);
    store.close();
    const out = join(tempDir("html-out-"), "run.html");
    const written = await runCli(["trace", run!.task_id.slice(0, 8), "--html", out, "--trace-dir", traces]);
    expect(written.code).toBe(0);
    expect(written.stdout).toContain(`wrote ${out}`);
    const html = readFileSync(out, "utf8");
    expect(html).not.toMatch(/<script[^>]*\ssrc=|<link[^>]*stylesheet|https?:\/\/(?!www\.w3)/);

    const page = await context.newPage();
    const requests: string[] = [];
    const url = pathToFileURL(out).href;
    await page.route("**", (route) => {
      requests.push(route.request().url());
      return route.request().url() === url ? route.continue() : route.abort();
    });
    const errors: string[] = [];
    page.on("pageerror", (err) => errors.push(err.message));
    await page.goto(url);
    await expect.poll(() => page.locator("#timeline .tl-bar").count()).toBe(callsOf(events));
    // One lane per agent step: the pipeline, its planner, four solvers, the aggregator.
    expect(await page.locator("#timeline .tl-lane").count()).toBe(events.filter((e) => e.type === "agent.started").length);
    expect(await page.textContent("#tree")).toContain("523.6");
    expect(requests).toEqual([url]);
    expect(errors).toEqual([]);
    await page.screenshot({ path: join(ARTIFACTS, "trace-html-plan-solver.png"), fullPage: true });

    // Hostile text inside the events cannot close the script that holds them.
    const { traceHtml } = await import("../../src/server/trace-html.js");
    const hostile = events.map((e) => (e.type === "run.finished" ? { ...e, answer: "</script><script>window.__pwned=1</script><!--" } : e)) as RunEvent[];
    const evil = join(tempDir("html-evil-"), "evil.html");
    writeFileSync(evil, traceHtml(hostile));
    const second = await context.newPage();
    await second.goto(pathToFileURL(evil).href);
    await expect.poll(() => second.textContent("#tree")).toContain("</script><script>window.__pwned=1</script>");
    expect(await second.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  });
});
