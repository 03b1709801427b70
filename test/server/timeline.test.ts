/**
 * Run history and timelines (docs/server.md#run-history), in a real headless
 * Chromium: the runs list of the page with its filters, a run's tree and its
 * timeline (one bar per model and tool call), live while the run goes on;
 * `runtime trace TASK_ID --html FILE` opened from file:// with every
 * request refused; hostile text from a tool and a model shown as text.
 * Screenshots go to test-artifacts/ for a person to look at.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RunEvent } from "../../src/events/types.js";
import { TraceStore } from "../../src/store/sqlite/trace-store.js";
import { ROOT, runCli } from "../support/cli.js";
import { requireComponent } from "../support/components.js";
import { tempDir, writeTeam } from "../support/team.js";
import { readSse, serveTeam, type Sse } from "../support/runtime-server.js";

vi.setConfig({ testTimeout: 90_000, hookTimeout: 60_000 });

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = join(ROOT, "test-artifacts");

/** The calls a timeline draws: every answered or failed model call and every finished tool call. */
const callsOf = (events: RunEvent[]) => events.filter((e) => e.type === "llm.response" || e.type === "llm.error" || e.type === "tool.finished").length;

/**
 * A team of two agents on the scripted model: `solver` (react: calculator and
 * a command tool `echo`, three replies each waiting `delay` ms, its tool call
 * and answer carrying `text`) and `greeter` (answers an input with "hello" at
 * once, and has no reply for any other: that run ends in error).
 */
function twoAgentTeam(delay: number, text = "the area"): string {
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
  greeter:
    kind: react
    description: Says hello.
    tools: [calculator]
`,
    {
      "echo.mjs": "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(JSON.stringify({echo: JSON.parse(s).text})));",
      "script.yaml": `version: 1
replies:
  - agent: solver
    delay_ms: ${delay}
    content: '{"observe": "start", "thought": "compute", "action": {"result": {"action_type": "CALL_TOOL", "output": {}}}}'
    tool_calls:
      - { id: c1, name: calculator, arguments: { expression: "round(pi * 25, 2)" } }
      - { id: c2, name: echo, arguments: { text: ${JSON.stringify(text)} } }
  - agent: solver
    delay_ms: ${delay}
    content: '{"observe": "done", "thought": "answer", "action": {"result": {"action_type": "CALL_TOOL", "output": {}}}}'
    tool_calls:
      - { id: c3, name: calculator, arguments: { expression: "round(2 * pi * 5, 2)" } }
  - agent: solver
    delay_ms: ${delay}
    content: ${JSON.stringify(JSON.stringify({ observe: "ok", thought: "answer", action: { result: { action_type: "ANSWER", output: { answer: `Answer: ${text}` } } } }))}
  - agent: greeter
    match: hello
    content: '{"observe": "a greeting", "thought": "greet back", "action": {"result": {"action_type": "ANSWER", "output": {"answer": "Hello to you."}}}}'
`,
    },
  );
}

/** The stored events of a run, read from the server's trace store. */
function storedEvents(traceDir: string, taskId: string): RunEvent[] {
  const store = TraceStore.open(traceDir, { create: false });
  try {
    return store.eventsOfTask(taskId);
  } finally {
    store.close();
  }
}

describe("run history and timelines in Chromium", () => {
  let context: BrowserContext;
  let profile: string;
  const closers: { close(): Promise<void> }[] = [];

  beforeAll(async () => {
    requireComponent("chromium");
    mkdirSync(ARTIFACTS, { recursive: true });
    profile = mkdtempSync(join(tmpdir(), "timeline-chromium-"));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
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

  /** Start a run through the API (POST /v1/runs) and read its stream to the end in the background. */
  function startRun(server: Awaited<ReturnType<typeof serveTeam>>, body: { input: string; agent?: string }): { taskId: Promise<string>; done: Promise<Sse[]> } {
    const response = server.fetch(`${server.url}/v1/runs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    const taskId = response.then((r) => {
      if (r.status !== 200) throw new Error(`POST /v1/runs answered ${r.status}`);
      return r.headers.get("x-task-id") ?? "";
    });
    return { taskId, done: response.then((r) => readSse(r)) };
  }

  const rows = (page: Page) => page.locator("#runs tbody tr[data-task]");
  const bars = (page: Page) => page.locator("#timeline .tl-bar");

  it("a run started through the API appears in the list, live; opened, its timeline grows while it runs", async () => {
    const server = await serveTeam(twoAgentTeam(2000));
    closers.push(server);
    const { page, errors } = await open(server.pageUrl);
    await expect.poll(() => page.textContent("#team-name")).toBe("slow");
    await expect.poll(() => page.locator("#runs tbody").textContent()).toContain("No runs.");

    const run = startRun(server, { input: "Area and circumference of a circle of radius 5?", agent: "solver" });
    const taskId = await run.taskId;
    // The page did not start it: the list finds it, running.
    const row = page.locator(`#runs tbody tr[data-task="${taskId}"]`);
    await expect.poll(() => row.textContent(), { timeout: 5_000 }).toContain("running");
    await row.click();
    expect(new URL(page.url()).searchParams.get("task")).toBe(taskId);
    // A model call under way is drawn as running, and bars are added as calls end.
    await expect.poll(() => page.locator("#timeline .tl-running").count(), { timeout: 5_000 }).toBeGreaterThan(0);
    const seen = new Set<number>();
    const watch = setInterval(
      () =>
        void bars(page)
          .count()
          .then(
            (n) => seen.add(n),
            () => undefined,
          ),
      100,
    );
    await page.screenshot({ path: join(ARTIFACTS, "timeline-live-running.png"), fullPage: true });
    await run.done;
    await expect.poll(() => page.textContent("#answer"), { timeout: 10_000 }).toContain("Answer: the area");
    clearInterval(watch);
    // The list's row says so without a reload.
    await expect.poll(() => row.textContent(), { timeout: 5_000 }).toContain("answer");

    const events = storedEvents(server.traceDir, taskId);
    const calls = callsOf(events);
    expect(calls).toBe(6); // 3 model calls, 3 tool calls
    await expect.poll(() => page.locator("#timeline .tl-bar:not(.tl-running)").count()).toBe(calls);
    expect(await page.locator("#timeline .tl-running").count()).toBe(0);
    expect(await page.locator("#timeline .tl-model").count()).toBe(3);
    expect(await page.locator("#timeline .tl-tool").count()).toBe(3);
    expect(await page.locator("#timeline .tl-lane").count()).toBe(1);
    // Seen growing on the way to six bars.
    expect(seen.size, `bar counts seen while the run went on: ${[...seen]}`).toBeGreaterThan(1);
    expect(Math.min(...seen)).toBeLessThan(calls);
    // The tree: the agent, its three recursions, each call.
    const tree = await page.textContent("#tree");
    expect(tree).toContain("solver (react) → answer");
    expect(await page.locator("#tree .tree-recursion").count()).toBe(3);
    expect(tree).toContain('tool echo({"text":"the area"}) → {"echo":"the area"}');
    // Each bar says its duration (and a model call its tokens); the tooltip says more.
    const model = page.locator("#timeline .tl-model").first();
    expect(await model.textContent()).toMatch(/^scripted · [\d.]+ m?s · \d+ tok$/);
    await model.hover();
    await expect.poll(() => page.locator("#timeline .tl-tip").isVisible()).toBe(true);
    const tip = await page.textContent("#timeline .tl-tip");
    expect(tip).toMatch(/tokens\d+ \(\d+ prompt \+ \d+ completion\)/);
    expect(tip).toContain("recursion 1");
    expect(tip).toContain("thoughtcompute");
    await page.locator("#timeline .tl-tool", { hasText: "echo" }).hover();
    await expect.poll(() => page.textContent("#timeline .tl-tip")).toContain('result{"echo":"the area"}');
    await page.screenshot({ path: join(ARTIFACTS, "timeline-finished-tooltip.png"), fullPage: true });
    expect(errors).toEqual([]);
  });

  it("lists runs newest first, filtered by agent and status; a run opened from the list shows its stored timeline", async () => {
    const server = await serveTeam(twoAgentTeam(0));
    closers.push(server);
    const solved = startRun(server, { input: "Area of a circle of radius 5?", agent: "solver" });
    await solved.done;
    const greeted = startRun(server, { input: "hello there", agent: "greeter" });
    await greeted.done;
    const failed = startRun(server, { input: "goodbye", agent: "greeter" });
    await failed.done;
    const ids = { solved: await solved.taskId, greeted: await greeted.taskId, failed: await failed.taskId };

    // The API itself: status= and agent= together; a status it does not know is refused.
    const listed = async (query: string) =>
      ((await (await server.fetch(`${server.url}/v1/runs?${query}`)).json()) as { runs: { task_id: string }[] }).runs.map((r) => r.task_id);
    expect(await listed("status=answer")).toEqual([ids.greeted, ids.solved]);
    expect(await listed("status=error&agent=greeter")).toEqual([ids.failed]);
    expect(await listed("status=running")).toEqual([]);
    expect(await listed("agent=solver&status=")).toEqual([ids.solved]);
    const bad = await server.fetch(`${server.url}/v1/runs?status=done`);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('status must be one of answer, error, paused, blocked, running, got \\"done\\"');

    const { page, errors } = await open(server.pageUrl);
    await expect.poll(() => rows(page).count()).toBe(3);
    const shown = async () => await rows(page).evaluateAll((trs) => trs.map((tr) => (tr as unknown as { dataset: { task: string } }).dataset.task));
    expect(await shown()).toEqual([ids.failed, ids.greeted, ids.solved]);

    const filter = async (agent: string, status: string, expected: string[]) => {
      await page.selectOption("#filter-agent", agent);
      await page.selectOption("#filter-status", status);
      await expect.poll(shown, { message: `agent=${agent} status=${status}` }).toEqual(expected);
    };
    await filter("greeter", "", [ids.failed, ids.greeted]);
    await filter("solver", "", [ids.solved]);
    await filter("", "error", [ids.failed]);
    await filter("", "answer", [ids.greeted, ids.solved]);
    await filter("greeter", "answer", [ids.greeted]);
    await filter("solver", "error", []);
    expect(await page.locator("#runs tbody").textContent()).toContain("No runs.");
    await filter("", "running", []);
    await filter("", "", [ids.failed, ids.greeted, ids.solved]);
    await page.selectOption("#filter-status", "error");
    await expect.poll(shown).toEqual([ids.failed]);
    await page.screenshot({ path: join(ARTIFACTS, "runs-filtered-error.png"), fullPage: true });

    // The failed run: its error, and its one model call drawn failed.
    await rows(page).first().click();
    await expect.poll(() => page.textContent("#error")).toContain("no reply left for agent greeter");
    const failedEvents = storedEvents(server.traceDir, ids.failed);
    await expect.poll(() => bars(page).count()).toBe(callsOf(failedEvents));
    expect(await page.locator("#timeline .tl-failed").count()).toBe(failedEvents.filter((e) => e.type === "llm.error").length);

    // The solved run, from the list: its stored events, every call a bar.
    await page.selectOption("#filter-status", "");
    // By keyboard: a row opens with Enter, a bar shows its tooltip when focused.
    await page.locator(`#runs tbody tr[data-task="${ids.solved}"]`).focus();
    await page.keyboard.press("Enter");
    await expect.poll(() => page.textContent("#answer")).toContain("Answer: the area");
    await expect.poll(() => bars(page).count()).toBe(callsOf(storedEvents(server.traceDir, ids.solved)));
    expect(await page.locator("#runs tr.current").getAttribute("data-task")).toBe(ids.solved);
    await page.locator("#timeline .tl-tool", { hasText: "calculator" }).first().focus();
    await expect.poll(() => page.textContent("#timeline .tl-tip")).toContain('result{"expression":"round(pi * 25, 2)","result":78.54}');
    await page.screenshot({ path: join(ARTIFACTS, "timeline-stored-run.png"), fullPage: true });
    expect(errors).toEqual([]);
  });

  it("shows hostile text from a tool and a model as text: no element made, no script run, in the page and in trace --html", async () => {
    const hostile = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><!--`;
    const server = await serveTeam(twoAgentTeam(0, hostile));
    closers.push(server);
    const { page, errors } = await open(server.pageUrl);
    const fetched: string[] = [];
    page.on("request", (r) => fetched.push(new URL(r.url()).pathname));
    await page.fill("#input", hostile);
    await page.click("#run");
    await expect.poll(() => page.textContent("#answer"), { timeout: 20_000 }).toContain("<img src=x");
    await expect.poll(() => rows(page).count()).toBe(1);
    // The echo tool's result and the answer, as text in the timeline's tooltip, the tree and the list.
    await page.locator("#timeline .tl-tool", { hasText: "echo" }).hover();
    await expect.poll(() => page.textContent("#timeline .tl-tip")).toContain(`{"echo":${JSON.stringify(hostile)}}`);
    expect(await page.textContent("#tree")).toContain(`Answer: ${hostile}`);
    expect(await page.locator("#runs tbody").textContent()).toContain("<img src=x");
    expect(await page.locator("main img, main script").count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(fetched.filter((p) => p === "/x")).toEqual([]);
    expect(errors).toEqual([]);

    // The same run as one HTML file.
    const [run] = ((await (await server.fetch(`${server.url}/v1/runs`)).json()) as { runs: { task_id: string }[] }).runs;
    const out = join(tempDir("html-hostile-"), "run.html");
    const written = await runCli(["trace", run!.task_id, "--html", out, "--trace-dir", server.traceDir]);
    expect(written.code).toBe(0);
    const file = await context.newPage();
    const fileErrors: string[] = [];
    file.on("pageerror", (err) => fileErrors.push(err.message));
    const requests: string[] = [];
    const url = pathToFileURL(out).href;
    await file.route("**", (route) => {
      requests.push(route.request().url());
      return route.request().url() === url ? route.continue() : route.abort();
    });
    await file.goto(url);
    await expect.poll(() => file.locator("#timeline .tl-bar").count()).toBe(callsOf(storedEvents(server.traceDir, run!.task_id)));
    expect(await file.textContent("#tree")).toContain(`{"echo":${JSON.stringify(hostile)}}`);
    expect(await file.textContent("#input")).toBe(hostile);
    expect(await file.locator("body img, body script:not([id=events]):not([type=module])").count()).toBe(0);
    expect(await file.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(requests).toEqual([url]);
    expect(fileErrors).toEqual([]);
  });

  it("a run whose process died: listed as running; opened, its last call stops growing once following it gives up", async () => {
    const traceDir = tempDir("dead-run-");
    const store = TraceStore.open(traceDir);
    const t0 = Date.now() - 60_000;
    const base = { task_id: "dead-run-1", agent_id: "solver", step_id: "s1" };
    let seq = 0;
    const at = (ms: number) => ({ ...base, seq: ++seq, ts: new Date(t0 + ms).toISOString() });
    store.appendMany([
      { ...at(0), type: "run.started", input: "a run cut short" },
      { ...at(1), type: "agent.started", kind: "react", input: "a run cut short" },
      { ...at(2), type: "recursion.started", iteration: 1, trace_id: "r1" },
      { ...at(3), type: "llm.request", model: "scripted", messages: 2, trace_id: "r1" },
      {
        ...at(900),
        type: "llm.response",
        model: "scripted",
        usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
        duration_ms: 897,
        action_type: "CALL_TOOL",
        trace_id: "r1",
      },
      { ...at(1000), type: "tool.started", tool: "echo", call_id: "c1", arguments: { text: "hi" }, trace_id: "r1" },
    ] as RunEvent[]);
    store.close();
    const server = await serveTeam(twoAgentTeam(0), traceDir);
    closers.push(server);
    const { page, errors } = await open(server.pageUrl);
    const row = page.locator('#runs tbody tr[data-task="dead-run-1"]');
    await expect.poll(() => row.textContent()).toContain("running");
    await row.click();
    await expect.poll(() => page.locator("#timeline .tl-running").count()).toBe(1);
    await expect.poll(() => page.textContent("#status"), { timeout: 15_000 }).toContain("has not finished");
    const width = () => page.locator("#timeline .tl-running").evaluate((node) => (node as unknown as { style: { width: string } }).style.width);
    const before = await width();
    await page.waitForTimeout(1200);
    expect(await width()).toBe(before);
    expect(await page.locator("#timeline .tl-model").count()).toBe(1);
    expect(await page.textContent("#tree")).toContain("solver (react) · running");
    expect(errors).toEqual([]);
  });

  it("runtime trace TASK_ID --html writes one file that shows the same timeline offline, with no request", async () => {
    const traces = tempDir("html-trace-");
    const file = join(ROOT, "teams", "plan-solver.yaml");
    const exec = await runCli([
      "exec",
      file,
      "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.",
      "--trace-dir",
      traces,
      "--no-progress",
    ]);
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
    // `-` writes the same file to stdout.
    const piped = await runCli(["trace", run!.task_id, "--html", "-", "--trace-dir", traces]);
    expect(piped.code).toBe(0);
    expect(piped.stdout).toBe(html);
    // Bad uses: a clear message and exit 2 (usage) or 1 (not found), never a stack trace.
    const misuse: [string[], number, string][] = [
      [["trace", "--html", out], 2, "--html writes one run: give its TASK_ID"],
      [["trace", run!.task_id, "--html", out, "--json"], 2, "give one of --html FILE and --json"],
      [["trace", run!.task_id, "--html", join(traces, "no-such-dir", "run.html")], 2, "cannot write"],
      [["trace", "ffffffff", "--html", out], 1, "no run with task_id ffffffff"],
      [["trace", "--status", "done"], 2, '--status must be one of answer, error, paused, blocked, running, got "done"'],
      [["trace", "--status", "error"], 1, "no runs with status error"],
    ];
    for (const [args, code, message] of misuse) {
      const result = await runCli([...args, "--trace-dir", traces]);
      expect({ args, code: result.code, stderr: result.stderr }).toMatchObject({ args, code, stderr: expect.stringContaining(message) });
      expect(result.stderr).not.toMatch(/\n\s+at /);
    }
    const answered = await runCli(["trace", "--status", "answer", "--trace-dir", traces]);
    expect(answered.code).toBe(0);
    expect(answered.stdout).toContain(run!.task_id.slice(0, 8));
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
