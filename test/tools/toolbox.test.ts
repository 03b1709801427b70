import { describe, expect, it } from "vitest";
import { calculatorTool } from "../../src/tools/builtin/calculator.js";
import { terminateTool } from "../../src/tools/builtin/terminate.js";
import { createToolBox } from "../../src/tools/toolbox.js";
import { argsValidator } from "../../src/tools/validate-args.js";
import type { Tool } from "../../src/tools/types.js";
import { call, makeBox, SCOPE, sleep } from "../support/tools.js";

/** A read tool with an object schema, 1 s to run and 1,000 bytes of output, changed by `fields`. */
function tool(name: string, execute: Tool["execute"], fields: Partial<Tool> = {}): Tool {
  return Object.assign(
    { name, description: `the ${name} tool`, parameters: { type: "object" }, effect: "read" as const, timeout_ms: 1000, max_output_bytes: 1000, execute },
    fields,
  );
}

/** A tool that waits, counting how often it really ran. */
function waiter(name = "wait"): Tool & { runs: number; aborted: number } {
  const tool = {
    runs: 0,
    aborted: 0,
    name,
    description: "waits ms milliseconds",
    parameters: {
      type: "object",
      properties: { ms: { type: "integer", minimum: 0 } },
      required: ["ms"],
      additionalProperties: false,
    },
    effect: "read" as const,
    timeout_ms: 2000,
    max_output_bytes: 1000,
    execute: async (args: Record<string, unknown>, ctx: { signal: AbortSignal }) => {
      tool.runs++;
      const ms = Number(args.ms);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ms);
        ctx.signal.addEventListener("abort", () => {
          tool.aborted++;
          clearTimeout(timer);
          resolve();
        });
      });
      return { waited: ms, at: Date.now() };
    },
  };
  return tool;
}

describe("createToolBox", () => {
  it("offers the allowed tools' specs in allow-list order, and nothing else", () => {
    const calc = calculatorTool();
    const term = terminateTool();
    const { box } = makeBox([calc, term, waiter()], ["terminate", "calculator", "no_such_tool"]);
    expect(box.specs.map((s) => s.name)).toEqual(["terminate", "calculator"]);
    expect(Object.keys(box.specs[0]!).sort()).toEqual(["description", "name", "parameters"]);
    expect(box.has("calculator")).toBe(true);
    expect(box.has("wait")).toBe(false);
  });

  it("runs the calls of one reply concurrently and returns them in call order", async () => {
    const tool = waiter();
    const { box } = makeBox([tool]);
    // ajv loads on the process's first validation (src/lazy.ts): not part of what is timed here.
    await box.run([call("wait", { ms: 0 }, "warm")]);
    const started = Date.now();
    const outcomes = await box.run([call("wait", { ms: 300 }, "a"), call("wait", { ms: 100 }, "b"), call("wait", { ms: 200 }, "c")]);
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(outcomes.map((o) => o.call_id)).toEqual(["a", "b", "c"]);
    expect(outcomes.map((o) => (o.result as { waited: number }).waited)).toEqual([300, 100, 200]);
    // b finished first, then c, then a: they ran at once (in series, a would have finished first),
    // yet the outcomes stay in the model's order.
    const at = outcomes.map((o) => (o.result as { at: number }).at);
    expect(at[1]).toBeLessThan(at[2]!);
    expect(at[2]).toBeLessThan(at[0]!);
  });

  it("refuses a tool outside the allow-list without running it, naming the allowed ones", async () => {
    const allowed = waiter("wait");
    const forbidden = waiter("forbidden");
    const { box } = makeBox([allowed, forbidden, calculatorTool()], ["wait", "calculator"]);
    const [refused, unknown] = await box.run([call("forbidden", { ms: 1 }), call("rm_rf", {})]);
    expect(forbidden.runs).toBe(0);
    expect(refused!.ok).toBe(false);
    expect(refused!.error).toContain('tool "forbidden" is not available');
    expect(refused!.error).toContain("you may use: wait, calculator");
    expect(unknown!.ok).toBe(false);
    expect(unknown!.error).toContain('"rm_rf"');
  });

  it("validates arguments with ajv before the tool runs", async () => {
    const tool = waiter();
    const calc = calculatorTool();
    const { box } = makeBox([tool, calc]);
    const [badCalc, badWait, extra] = await box.run([
      call("calculator", { expression: 42 }),
      call("wait", { ms: "soon" }),
      call("wait", { ms: 1, also: true }),
    ]);
    expect(badCalc).toMatchObject({ ok: false, arguments: { expression: 42 } });
    expect(badCalc!.error).toContain("/expression must be string");
    expect(badWait!.error).toContain("/ms must be integer");
    expect(extra!.error).toContain("must NOT have additional properties (also)");
    expect(tool.runs).toBe(0);
    const [missing] = await box.run([call("calculator", {})]);
    expect(missing!.error).toContain("must have required property 'expression'");
  });

  it("sends malformed JSON arguments back with the parse error and the raw text", async () => {
    const tool = waiter();
    const { box } = makeBox([tool]);
    const raw = '{"ms": 5';
    const [bad, notObject] = await box.run([call("wait", raw), call("wait", "[1, 2]")]);
    expect(bad!.ok).toBe(false);
    expect(bad!.arguments).toBe(raw);
    expect(bad!.error).toMatch(/^arguments are not valid JSON \(.+\): \{"ms": 5$/);
    expect(notObject!.error).toContain("arguments must be a JSON object, got an array");
    expect(tool.runs).toBe(0);
  });

  it("tolerates a fenced JSON block and trailing commas", async () => {
    const { box } = makeBox([calculatorTool()]);
    const [fenced, comma] = await box.run([call("calculator", '```json\n{"expression": "1+1"}\n```'), call("calculator", '{"expression": "2*3",}')]);
    expect(fenced).toMatchObject({ ok: true, result: { result: 2 } });
    expect(comma).toMatchObject({ ok: true, result: { result: 6 } });
  });

  it("times a slow tool out, aborting its signal", async () => {
    const slow = waiter();
    Object.assign(slow, { timeout_ms: 150 });
    const { box } = makeBox([slow]);
    const started = Date.now();
    const [outcome] = await box.run([call("wait", { ms: 60_000 })]);
    // Ended by the timeout, not by the minute's wait.
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(outcome).toMatchObject({ ok: false, error: "timed out after 150 ms" });
    expect(slow.aborted).toBe(1);
  });

  it("gives a tool that reads its signal only after the timeout an aborted one, with the reason", async () => {
    let seen: { aborted: boolean; reason: string } | undefined;
    const late = tool(
      "late",
      async (_args, ctx) => {
        await new Promise((r) => setTimeout(r, 200));
        seen = { aborted: ctx.signal.aborted, reason: String((ctx.signal.reason as Error).message) };
        return "too late";
      },
      { timeout_ms: 50 },
    );
    const { box } = makeBox([late]);
    const [outcome] = await box.run([call("late", {})]);
    expect(outcome).toMatchObject({ ok: false, error: "timed out after 50 ms" });
    await new Promise((r) => setTimeout(r, 250));
    expect(seen).toEqual({ aborted: true, reason: "timed out after 50 ms" });
  });

  it("turns a throw into a one-line error and never throws itself", async () => {
    const broken = tool("broken", async () => {
      throw new Error("disk on fire\n    at somewhere (file.js:1:1)");
    });
    const { box } = makeBox([broken, calculatorTool()]);
    const [outcome, fine] = await box.run([call("broken", {}), call("calculator", { expression: "1+2" })]);
    expect(outcome).toMatchObject({ ok: false, error: "disk on fire" });
    expect(fine).toMatchObject({ ok: true, result: { expression: "1+2", result: 3 } });
  });

  it("caps the serialised output and says so", async () => {
    const chatty = tool("chatty", async () => ({ text: "é".repeat(500) }), { max_output_bytes: 100 });
    const { box } = makeBox([chatty]);
    const [outcome] = await box.run([call("chatty", {})]);
    expect(outcome!.ok).toBe(true);
    const result = outcome!.result as string;
    expect(typeof result).toBe("string");
    const full = Buffer.byteLength(JSON.stringify({ text: "é".repeat(500) }));
    expect(result).toContain(`[output truncated: ${full} bytes exceeded the cap of 100 bytes]`);
    expect(Buffer.byteLength(result.split("\n")[0]!)).toBeLessThanOrEqual(100);
    expect(result).not.toContain("\uFFFD");
  });

  it("aborts running tools when the step's signal is aborted", async () => {
    const controller = new AbortController();
    const tool = waiter();
    const { box } = makeBox([tool], ["wait"], controller.signal);
    const running = box.run([call("wait", { ms: 5000 }, "x"), call("wait", { ms: 5000 }, "y")]);
    await sleep(50);
    controller.abort();
    const outcomes = await running;
    expect(outcomes.map((o) => o.error)).toEqual(["aborted", "aborted"]);
    expect(tool.aborted).toBe(2);
    const [after] = await box.run([call("wait", { ms: 1 })]);
    expect(after).toMatchObject({ ok: false, error: "aborted before the tool ran" });
    expect(tool.runs).toBe(2);
  });

  it("emits tool.started and tool.finished with the scope and the trace_id", async () => {
    const { box, events } = makeBox([calculatorTool()]);
    await box.run([call("calculator", { expression: "2^10" }, "c1"), call("nope", "{}", "c2")], { trace_id: "tr-7" });
    const base = { task_id: "task-1", agent_id: SCOPE.agent_id, step_id: SCOPE.step_id, trace_id: "tr-7" };
    const started = events.filter((e) => e.type === "tool.started");
    const finished = events.filter((e) => e.type === "tool.finished");
    expect(started).toHaveLength(2);
    expect(started[0]).toMatchObject({ ...base, tool: "calculator", call_id: "c1", arguments: { expression: "2^10" } });
    const ok = finished.find((e) => e.call_id === "c1")!;
    expect(ok).toMatchObject({ ...base, tool: "calculator", ok: true, result: { expression: "2^10", result: 1024 } });
    expect(ok.duration_ms).toBeGreaterThanOrEqual(0);
    expect(ok).not.toHaveProperty("error");
    const refused = finished.find((e) => e.call_id === "c2")!;
    expect(refused).toMatchObject({ ...base, tool: "nope", ok: false });
    expect(refused.error).toContain("you may use: calculator");
    // Each call's started event comes before its finished event.
    for (const f of finished) {
      const s = started.find((e) => e.call_id === f.call_id)!;
      expect(s.seq).toBeLessThan(f.seq);
    }
  });
});

describe("parameter schemas", () => {
  it("two schemas with the same $id (two teams, or one team loaded twice, in one process) are both usable", () => {
    const first = { $id: "args", type: "object", properties: { x: { type: "string" } }, required: ["x"] };
    const second = { $id: "args", type: "object", properties: { y: { type: "number" } }, required: ["y"] };
    expect(argsValidator.check("a", first, { x: "1" })).toEqual({ ok: true });
    expect(argsValidator.check("b", second, { y: 1 })).toEqual({ ok: true });
    expect(argsValidator.check("b", second, { x: "1" })).toMatchObject({ ok: false });
    const recursive = { $id: "tree", type: "object", properties: { kids: { type: "array", items: { $ref: "#" } } } };
    expect(argsValidator.check("t", recursive, { kids: [{ kids: [] }] })).toEqual({ ok: true });
    expect(argsValidator.check("t", recursive, { kids: [{ kids: 3 }] })).toMatchObject({ ok: false });
  });

  it("know the string formats OpenAI tool schemas use, and check them", () => {
    const formats = ["date", "time", "date-time", "duration", "email", "hostname", "ipv4", "ipv6", "uri", "uuid"];
    const schema = {
      type: "object",
      properties: Object.fromEntries(formats.map((f) => [f, { type: "string", format: f }])),
    };
    expect(argsValidator.schemaProblem(schema)).toBeUndefined();
    const good = {
      date: "2024-02-29",
      time: "13:45:00Z",
      "date-time": "2024-02-29T13:45:00.5+01:00",
      duration: "P1DT2H",
      email: "ada@example.org",
      hostname: "api.example.org",
      ipv4: "127.0.0.1",
      ipv6: "::1",
      uri: "https://example.org/a?b=c",
      uuid: "123e4567-e89b-12d3-a456-426614174000",
    };
    expect(argsValidator.check("t", schema, good)).toEqual({ ok: true });
    const bad = {
      date: "2024-02-30",
      time: "25:00:00",
      "date-time": "yesterday",
      duration: "P",
      email: "ada at example.org",
      hostname: "-bad-.org",
      ipv4: "256.1.1.1",
      ipv6: "12345::",
      uri: "not a uri",
      uuid: "123",
    };
    const check = argsValidator.check("t", schema, bad);
    expect(check.ok).toBe(false);
    for (const f of formats) expect(check.ok ? "" : check.error).toContain(`/${f} must match format "${f}"`);
    expect(argsValidator.schemaProblem({ type: "object", properties: { c: { type: "string", format: "color" } } })).toMatch(
      /^unsupported format 'color' at #\/properties\/c; supported formats: date, /,
    );
  });

  it("are compiled strictly; a broken schema refuses the call instead of crashing", async () => {
    expect(argsValidator.schemaProblem({ type: "object", properties: { a: { type: "string" } } })).toBeUndefined();
    expect(argsValidator.schemaProblem({ type: "object", frobnicate: true })).toBe("unknown keyword 'frobnicate'");
    const odd = tool("odd", async () => "ran", { parameters: { type: "object", frobnicate: true } });
    const { box } = makeBox([odd]);
    const [outcome] = await box.run([call("odd", {})]);
    expect(outcome!.ok).toBe(false);
    expect(outcome!.error).toBe("tool \"odd\" has an invalid parameter schema: unknown keyword 'frobnicate'");
  });

  it("journals a call's start, commits before a write tool's body runs (not a read tool's), and journals its outcome", async () => {
    const order: string[] = [];
    const writer = {
      ...waiter(),
      effect: "write" as const,
      execute: async () => {
        order.push("body");
        return { done: true };
      },
    };
    const reader = {
      ...waiter(),
      name: "look",
      execute: async () => {
        order.push("read");
        return { done: true };
      },
    };
    const box = createToolBox({
      tools: [writer, reader],
      allow: ["wait", "look"],
      scope: SCOPE,
      emit: () => {},
      signal: new AbortController().signal,
      journal: {
        open: (c) => ({ key: `k-${c.id}`, quiet: false }),
        started: (key, c) => order.push(`started ${key} ${c.id}`),
        commit: () => {
          order.push("commit");
        },
        finished: (key, outcome) => order.push(`finished ${key} ${outcome.ok}`),
      },
    });
    await box.run([call("wait", { ms: 0 }, "c1")]);
    expect(order).toEqual(["started k-c1 c1", "commit", "body", "finished k-c1 true"]);
    order.length = 0;
    // A read tool changes nothing a resume would repeat: its start is committed with what follows.
    await box.run([call("look", { ms: 0 }, "c2")]);
    expect(order).toEqual(["started k-c2 c2", "read", "finished k-c2 true"]);
    // A call refused before any body runs has nothing to commit ahead of.
    order.length = 0;
    await box.run([call("wait", { ms: "x" }, "c2")]);
    expect(order).toEqual(["started k-c2 c2", "finished k-c2 false"]);
  });
});
