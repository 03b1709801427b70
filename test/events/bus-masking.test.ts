import { describe, expect, test } from "vitest";
import { EventBus, eventJson } from "../../src/events/bus.js";
import type { EventScope, RunEvent, RunEventBody } from "../../src/events/types.js";
import { redact } from "../../src/redact.js";
import { circleReactRun, steppingClock } from "../support/trace-events.js";

/**
 * An event is masked from its parts when a sink listens as it is emitted
 * (the body, then the envelope's fields, the scope's made once per scope
 * object), and whole when nobody listened (`mask`, the run's last event).
 * Both must give the same event and the same JSON text.
 */
const SECRETS = ["conf-key-123456"];

interface Case {
  body: RunEventBody;
  scope: EventScope;
}

function emitted(taskId: string, cases: readonly Case[], listening: boolean): Promise<RunEvent[]> {
  const bus = new EventBus(taskId, steppingClock(), { secrets: SECRETS });
  const seen: RunEvent[] = [];
  if (listening) bus.subscribe((e) => seen.push(e));
  for (const { body, scope } of cases) {
    const event = bus.emit(body, scope);
    if (!listening) seen.push(bus.mask(event));
  }
  bus.close();
  return Promise.resolve(seen);
}

async function expectSameEitherWay(taskId: string, cases: readonly Case[]): Promise<RunEvent[]> {
  const parts = await emitted(taskId, cases, true);
  const whole = await emitted(taskId, cases, false);
  expect(parts).toEqual(whole);
  for (const [i, event] of parts.entries()) {
    const text = eventJson(event);
    expect(text, `event ${i}`).toBe(eventJson(whole[i]!));
    expect(text, `event ${i}`).toBe(JSON.stringify(event));
    expect(JSON.parse(text)).toEqual(redact(JSON.parse(JSON.stringify(event)), SECRETS));
  }
  return parts;
}

const step: EventScope = { agent_id: "solver", step_id: "s1" };
const recursion: EventScope = { agent_id: "solver", step_id: "s1", trace_id: "tr-1" };
const child: EventScope = { agent_id: "helper", step_id: "s2", parent_step_id: "s1", trace_id: "tr-2" };

describe("an event masked from its parts is the event masked whole", () => {
  test("a whole react run, scopes shared by many events", async () => {
    const run = circleReactRun("task-m");
    const cases = run.map((e) => {
      const { seq: _seq, ts: _ts, task_id: _task, agent_id, step_id, parent_step_id, trace_id, ...body } = e;
      const scope: EventScope = { agent_id };
      if (step_id !== undefined) scope.step_id = step_id;
      if (parent_step_id !== undefined) scope.parent_step_id = parent_step_id;
      if (trace_id !== undefined) scope.trace_id = trace_id;
      return { body: body as RunEventBody, scope };
    });
    const events = await expectSameEitherWay("task-m", cases);
    expect(events.map((e) => e.type)).toEqual(run.map((e) => e.type));
  });

  test("secrets in the body, the scope and the task id are masked wherever they are", async () => {
    const leaky: EventScope = { agent_id: "conf-key-123456", step_id: "sk-abcdefghijklmnop", trace_id: "Bearer abc.def" };
    const events = await expectSameEitherWay("task Bearer xyz123", [
      { body: { type: "run.started", input: "key sk-abcdefghijklmnop" }, scope: step },
      {
        body: {
          type: "tool.finished",
          tool: "http",
          call_id: "c",
          arguments: { api_key: "k-SECRET-1", nested: [{ password: "p" }, "Bearer tok-SECRET-2"] },
          ok: false,
          error: "401 conf-key-123456",
          duration_ms: 1,
        },
        scope: recursion,
      },
      { body: { type: "recursion.started", iteration: 1 }, scope: leaky },
      { body: { type: "recursion.started", iteration: 2 }, scope: leaky },
      { body: { type: "recursion.started", iteration: 3 }, scope: child },
    ]);
    const text = events.map(eventJson).join("\n");
    expect(text).not.toMatch(/SECRET|sk-abcdefghijklmnop|conf-key-123456|xyz123|abc\.def/);
    expect(events[2]).toMatchObject({ agent_id: "[REDACTED]", step_id: "sk-[REDACTED]", trace_id: "Bearer [REDACTED]", task_id: "task Bearer [REDACTED]" });
  });

  test("fields left undefined, values JSON cannot hold, an envelope field in the body, a scope object changed between events", async () => {
    const changing: EventScope = { agent_id: "solver", step_id: "s1" };
    const cases: Case[] = [
      {
        body: {
          type: "llm.response",
          model: "m",
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          duration_ms: 1,
          content: undefined,
        } as RunEventBody,
        scope: changing,
      },
      { body: { type: "tool.finished", tool: "t", call_id: "c", arguments: { n: 10n }, ok: true, duration_ms: 1 } as unknown as RunEventBody, scope: step },
      { body: { type: "recursion.started", iteration: 1, trace_id: "from-the-body" } as RunEventBody, scope: step },
    ];
    const first = await expectSameEitherWay("task-u", cases);
    expect(eventJson(first[1]!)).toContain("not recorded");
    // The same scope object, changed: its next event carries the new fields.
    const bus = new EventBus("task-u", steppingClock(), { secrets: SECRETS });
    const seen: RunEvent[] = [];
    bus.subscribe((e) => seen.push(e));
    bus.emit({ type: "recursion.started", iteration: 1 }, changing);
    changing.trace_id = "tr-9";
    changing.step_id = "conf-key-123456";
    bus.emit({ type: "recursion.started", iteration: 2 }, changing);
    expect(seen[1]).toMatchObject({ trace_id: "tr-9", step_id: "[REDACTED]" });
    expect(JSON.parse(eventJson(seen[1]!))).toEqual(seen[1]);
  });

  test("bodies that are not plain data: an envelope field left undefined, a toJSON, an own __proto__ key", async () => {
    class WithToJSON {
      type = "run.started" as const;
      input = "x";
      toJSON(): string {
        return "just text";
      }
    }
    const parts = await expectSameEitherWay("task-p", [
      { body: { type: "recursion.started", iteration: 1, step_id: undefined } as RunEventBody, scope: child },
      { body: new WithToJSON() as unknown as RunEventBody, scope: step },
      { body: JSON.parse('{"type":"run.started","input":"x","__proto__":{"polluted":true}}') as RunEventBody, scope: step },
    ]);
    for (const event of parts) expect(() => JSON.parse(eventJson(event))).not.toThrow();
  });

  test("a getter is read once: what the event holds and what its text says are the same, masked", () => {
    let reads = 0;
    const body = {
      type: "run.started" as const,
      get input(): string {
        return reads++ === 0 ? "clean" : "conf-key-123456";
      },
    };
    const bus = new EventBus("task-g", steppingClock(), { secrets: SECRETS });
    const seen: RunEvent[] = [];
    bus.subscribe((e) => seen.push(e));
    bus.emit(body, step);
    expect(reads).toBe(1);
    expect(JSON.parse(eventJson(seen[0]!))).toEqual(seen[0]);
    expect(eventJson(seen[0]!)).not.toContain("conf-key");
  });

  test("a configured secret that is part of a timestamp is masked there, as masking the whole event does", async () => {
    const at = () => new Date("2030-01-02T03:04:05.678Z");
    const emitOne = async (listening: boolean): Promise<RunEvent> => {
      const bus = new EventBus("task-ts", at, { secrets: ["03:04:05"] });
      const seen: RunEvent[] = [];
      if (listening) bus.subscribe((e) => seen.push(e));
      const event = bus.emit({ type: "run.started", input: "x" }, step);
      bus.close();
      if (!listening) seen.push(bus.mask(event));
      return seen[0]!;
    };
    const [parts, whole] = [await emitOne(true), await emitOne(false)];
    expect(parts.ts).toBe("2030-01-02T[REDACTED].678Z");
    expect(parts).toEqual(whole);
    expect(eventJson(parts)).toBe(eventJson(whole));
  });
});
