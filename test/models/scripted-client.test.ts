import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { createScriptedChatClient } from "../../src/models/scripted-client.js";
import { createChatClient } from "../../src/models/factory.js";
import type { ChatMessage, ChatRequest } from "../../src/models/types.js";
import { failure } from "../support/failure.js";

const dir = mkdtempSync(join(tmpdir(), "scripted-"));
let n = 0;
function scriptFile(text: string): string {
  const file = join(dir, `script-${++n}.yaml`);
  writeFileSync(file, text);
  return file;
}
function client(text: string, stream = false) {
  return createScriptedChatClient({ name: "offline", provider: "scripted", model: "scripted", script: scriptFile(text), stream });
}
const user = (content: string): ChatMessage => ({ role: "user", content });
const ask = (agent_id: string | undefined, ...messages: ChatMessage[]): ChatRequest => ({
  agent_id,
  messages: messages.length > 0 ? messages : [user("hello")],
});

describe("scripted ChatClient", () => {
  it("picks the first unconsumed reply for the agent whose match fits the last user message", async () => {
    const c = client(`
version: 1
replies:
  - { agent: planner, content: "plan A" }
  - { agent: solver, match: "radius", content: "solve radius" }
  - { agent: solver, content: "solve any" }
  - { content: "anyone" }
`);
    expect((await c.chat(ask("solver", user("no match here")))).content).toBe("solve any");
    expect((await c.chat(ask("solver", user("circle"), user("radius 5")))).content).toBe("solve radius");
    expect((await c.chat(ask("planner"))).content).toBe("plan A");
    expect((await c.chat(ask("planner"))).content).toBe("anyone");
    const err = await failure(c.chat(ask("planner")));
    expect(err.code).toBe("MODEL_UNAVAILABLE");
    expect(err.message).toMatch(/^scripted model: no reply left for agent planner \(script .*script-\d+\.yaml\)$/);
  });

  it("keeps consumption per client instance and safe across concurrent agents", async () => {
    const text = `
version: 1
replies:
${Array.from({ length: 10 }, (_, i) => `  - { agent: ${i % 2 ? "b" : "a"}, content: "r${i}", delay_ms: ${(i * 7) % 5} }`).join("\n")}
`;
    const c = client(text);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => c.chat(ask(i % 2 ? "b" : "a"))));
    expect(answers.map((a) => a.content).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `r${i}`).sort());
    await expect(c.chat(ask("a"))).rejects.toThrow(/no reply left for agent a/);

    const fresh = createScriptedChatClient({ name: "o", provider: "scripted", model: "scripted", script: scriptFile(text) });
    expect((await fresh.chat(ask("a"))).content).toBe("r0");
  });

  it("returns tool calls with ids, JSON arguments, string arguments verbatim, and estimated or scripted usage", async () => {
    const c = client(`
version: 1
replies:
  - content: '{"thought": "compute"}'
    tool_calls:
      - { id: call_1, name: calculator, arguments: { expression: "round(pi * 5^2, 2)" } }
      - { name: calculator, arguments: '{"expression": "2*pi*5"' }
  - { content: done, usage: { prompt_tokens: 12, completion_tokens: 7 } }
`);
    const first = await c.chat(ask("solver"));
    expect(first.finish_reason).toBe("tool_calls");
    expect(first.tool_calls).toEqual([
      { id: "call_1", name: "calculator", arguments: '{"expression":"round(pi * 5^2, 2)"}' },
      { id: expect.stringMatching(/^call_/), name: "calculator", arguments: '{"expression": "2*pi*5"' },
    ]);
    expect(first.usage.prompt_tokens).toBe(Math.ceil(JSON.stringify([user("hello")]).length / 4));
    expect(first.usage.completion_tokens).toBeGreaterThan(0);
    const second = await c.chat(ask("solver"));
    expect(second).toEqual({ content: "done", tool_calls: [], finish_reason: "stop", usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 } });
  });

  it("fills {{result:ID}} placeholders from tool messages and from the react agent's tool_results", async () => {
    const c = client(`
version: 1
replies:
  - content: "Area {{result:call_1}} m2, circumference {{ result:call_2.value }} m, raw {{result:call_3}}, {{result:call_9}}"
    tool_calls:
      - { name: report, arguments: { area: "{{result:call_1}}", text: "c={{result:call_2.value}}", list: ["{{result:call_2.parts.1}}"] } }
      - { name: echo, arguments: '{"x": {{result:call_1}}}' }
  - content: "{{result:call_1.result}} {{result:call_2.result.parts.0}} {{result:call_3.ok}} {{result:call_3.error}} {{result:call_4}} {{result:call_4.result}} {{result:call_2}}"
`);
    const react = JSON.stringify({
      observe: "",
      action: { result: { action_type: "CALL_TOOL" } },
      tool_results: [
        { call_id: "call_2", tool: "calculator", arguments: {}, ok: true, result: { value: 31.42, parts: [1, 2] } },
        { call_id: "call_3", tool: "calculator", arguments: {}, ok: false, error: "division by zero" },
      ],
    });
    const messages: ChatMessage[] = [
      user("radius 5"),
      { role: "assistant", content: null, tool_calls: [{ id: "call_1", name: "calculator", arguments: "{}" }] },
      { role: "tool", tool_call_id: "call_1", content: '{"ok": true, "result": 78.54}' },
      { role: "tool", tool_call_id: "call_4", content: "plain text result" },
      { role: "assistant", content: react },
    ];
    const res = await c.chat(ask("solver", ...messages));
    expect(res.content).toBe("Area 78.54 m2, circumference 31.42 m, raw division by zero, <missing result call_9>");
    expect(JSON.parse(res.tool_calls[0]?.arguments ?? "")).toEqual({ area: 78.54, text: "c=31.42", list: [2] });
    expect(res.tool_calls[1]?.arguments).toBe('{"x": 78.54}');
    const paths = await c.chat(ask("solver", ...messages));
    expect(paths.content).toBe('78.54 1 false division by zero plain text result plain text result {"value":31.42,"parts":[1,2]}');
  });

  it("reads into the calculator's result object and keeps JSON content valid whatever the result holds", async () => {
    const c = client(`
version: 1
replies:
  - content: |
      {"action": {"result": {"action_type": "ANSWER", "output": {"answer": "Area {{result:call_area.result}} m2 ({{result:call_note}})"}}}}
`);
    const react = JSON.stringify({
      recursion: 2,
      action_type: "CALL_TOOL",
      tool_results: [
        { call_id: "call_area", tool: "calculator", arguments: {}, ok: true, result: { expression: "round(pi * 5^2, 2)", result: 78.54 } },
        { call_id: "call_note", tool: "lookup", arguments: {}, ok: true, result: 'say "hi"\nbye' },
      ],
    });
    const res = await c.chat(ask("solver", user("radius 5"), { role: "assistant", content: react }));
    expect(JSON.parse(res.content ?? "")).toEqual({
      action: { result: { action_type: "ANSWER", output: { answer: 'Area 78.54 m2 (say "hi"\nbye)' } } },
    });
  });

  it("never evaluates template syntax other than the result placeholder", async () => {
    const c = client(`
version: 1
replies:
  - content: "{{#each x}}{{this}}{{/each}} {{constructor.name}} {{result:call_1.__proto__}}"
`);
    const res = await c.chat(ask("a", user("q"), { role: "tool", tool_call_id: "call_1", content: '{"a": 1}' }));
    expect(res.content).toBe("{{#each x}}{{this}}{{/each}} {{constructor.name}} <missing result call_1.__proto__>");
  });

  it("streams content through onDelta in pieces when the model streams", async () => {
    const long = "x".repeat(40);
    const deltas: string[] = [];
    const streaming = client(`version: 1\nreplies:\n  - { content: "${long}" }\n`, true);
    await streaming.chat({ ...ask("a"), onDelta: (t) => deltas.push(t) });
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.join("")).toBe(long);

    const quiet: string[] = [];
    await client(`version: 1\nreplies:\n  - { content: "${long}" }\n`).chat({ ...ask("a"), onDelta: (t) => quiet.push(t) });
    expect(quiet).toEqual([]);
  });

  it("honours delay_ms and aborts during it", async () => {
    const c = client(`version: 1\nreplies:\n  - { content: slow, delay_ms: 60000 }\n`);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const started = Date.now();
    const err = await failure(c.chat({ ...ask("a"), signal: controller.signal }));
    expect(err.code).toBe("ABORTED");
    // Ended by the abort, not by the minute's delay.
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("is what the factory builds for provider: scripted", async () => {
    const c = createChatClient({ name: "o", provider: "scripted", model: "demo-model", script: scriptFile("version: 1\nreplies: [{content: hi}]\n") });
    expect(c.model).toBe("demo-model");
    expect((await c.chat(ask(undefined))).content).toBe("hi");
  });
});

describe("script validation", () => {
  function problems(text: string): string {
    try {
      client(text);
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).message;
    }
    throw new Error("the script was accepted");
  }

  it("names the file, line, column and path of an unknown key", () => {
    const msg = problems("version: 1\nreplies:\n  - content: hi\n    conten: typo\n");
    expect(msg).toMatch(/script-\d+\.yaml:4:5 \/replies\/0\/conten scripted model: unknown key 'conten' \(did you mean 'content'\?\)/);
  });

  it("rejects a wrong version, a bad type, a bad regex, duplicate keys and __proto__", () => {
    // The words every YAML file's problems have (src/config/parse.ts, src/config/validate.ts).
    expect(problems("version: 2\nreplies: []\n")).toMatch(/:1:10 \/version scripted model: expected 1, got 2/);
    expect(problems("version: 1\nreplies:\n  - { delay_ms: -1 }\n")).toMatch(/\/replies\/0\/delay_ms scripted model: expected a number >= 0, got -1/);
    expect(problems("version: 1\nreplies:\n  - { match: '(' }\n")).toMatch(/\/replies\/0\/match scripted model: invalid regex/);
    expect(problems("version: 1\nversion: 1\nreplies: []\n")).toMatch(/:2:1 \/version scripted model: duplicate key 'version'/);
    expect(problems("version: 1\nreplies:\n  - { __proto__: { x: 1 }, content: a }\n")).toMatch(
      /\/replies\/0\/__proto__ scripted model: key '__proto__' is not allowed/,
    );
    expect(problems("version: 1\nreplies:\n  - tool_calls: [{ name: calc }]\n")).toMatch(/scripted model: missing required key 'arguments'/);
  });

  it("reports a missing script file as one line naming it", () => {
    let message = "";
    try {
      createScriptedChatClient({ name: "o", provider: "scripted", model: "s", script: join(dir, "nope.yaml") });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe(`${join(dir, "nope.yaml")}:1:1 / scripted model: file not found`);
  });
});
