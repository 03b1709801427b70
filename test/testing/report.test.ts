/**
 * What `runtime test` says when a case fails (each sort of expectation names
 * what differed), when a test file is invalid (FILE:LINE:COL, exit 2), and the
 * JUnit XML it writes. Spawned CLI processes on the example teams.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";
import { XMLParser, XMLValidator } from "fast-xml-parser";
import { describe, expect, it } from "vitest";
import { ROOT, runCli } from "../support/cli.js";
import { tempDir } from "../support/team.js";

/** A test file in a fresh folder whose `team` and recordings point at the example teams. */
function testFile(body: string, name = "bad.test.yaml"): { dir: string; file: string } {
  const dir = tempDir();
  const teams = relative(dir, join(ROOT, "teams"));
  const file = join(dir, name);
  writeFileSync(file, body.replaceAll("TEAMS", teams));
  return { dir, file };
}

const CIRCLE = `
    input: What are the area and circumference of a circle with radius 5 meters?
    recording: TEAMS/scripts/circle-react.yaml`;

describe("a failing expectation names what differed", () => {
  it("answer, result, tool calls, plan, todos and budget", async () => {
    const { file } = testFile(`version: 1
team: TEAMS/circle-react.yaml
cases:
  - name: answer contains${CIRCLE}
    expect: { answer: { contains: "78.55 m²" } }
  - name: answer matches${CIRCLE}
    expect: { answer: { matches: "^The area" } }
  - name: answer equals${CIRCLE}
    expect: { answer: { equals: "42" } }
  - name: result${CIRCLE}
    expect: { result: error }
  - name: argument equals${CIRCLE}
    expect:
      tool_calls:
        - { name: calculator, arguments: { expression: "round(pi * 5^2, 2)" } }
        - { name: calculator, arguments: { expression: "2 * pi * 5" } }
  - name: argument matches${CIRCLE}
    expect:
      tool_calls: [{ name: calculator, arguments: { expression: { matches: "^pi" } } }, calculator]
  - name: tool name${CIRCLE}
    expect: { tool_calls: [calculator, terminate] }
  - name: call count${CIRCLE}
    expect: { tool_calls: [calculator] }
  - name: any order${CIRCLE}
    expect:
      tool_calls:
        any_order: [{ name: calculator, arguments: { expression: { contains: "pi * 6" } } }, calculator]
  - name: in order, not exact${CIRCLE}
    expect: { tool_calls: { in_order: [terminate], exact: false } }
  - name: plan steps${CIRCLE}
    expect: { plan: { steps: 4 } }
  - name: plan status${CIRCLE}
    expect: { plan: { status: completed } }
  - name: todos${CIRCLE}
    expect: { todos: { count: 2 } }
  - name: model calls${CIRCLE}
    expect: { budget: { max_model_calls: 2 } }
  - name: tokens${CIRCLE}
    expect: { budget: { max_tokens: 10 } }
  - name: tool calls budget${CIRCLE}
    expect: { budget: { max_tool_calls: 1 } }
  - name: still passes${CIRCLE}
    expect: { answer: { contains: "78.54 m²" } }
`);
    const r = await runCli(["test", file]);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(1);
    const report = (name: string) => {
      const start = r.stdout.indexOf(`✗ ${name} (`);
      expect(start, `no failure line for "${name}" in:\n${r.stdout}`).toBeGreaterThan(-1);
      const rest = r.stdout.slice(start).split("\n");
      const details: string[] = [];
      for (const line of rest.slice(1)) {
        if (!line.startsWith("      ")) break;
        details.push(line.trim());
      }
      return details;
    };
    const answer = '"A circle of radius 5 m has an area of 78.54 m² and a circumference of 31.42 m."';
    expect(report("answer contains")).toEqual([`answer: expected to contain "78.55 m²", got ${answer}`]);
    expect(report("answer matches")).toEqual([`answer: expected to match /^The area/, got ${answer}`]);
    expect(report("answer equals")).toEqual([`answer: expected to equal "42", got ${answer}`]);
    expect(report("result")).toEqual([`result: expected error, got answer (${answer})`]);
    expect(report("argument equals")).toEqual(['tool_calls[1].arguments.expression: expected = "2 * pi * 5", got "round(2 * pi * 5, 2)"']);
    expect(report("argument matches")).toEqual(['tool_calls[0].arguments.expression: expected matching /^pi/, got "round(pi * 5^2, 2)"']);
    expect(report("tool name")).toEqual(["tool_calls[1].name: expected terminate, got calculator"]);
    expect(report("call count")).toEqual(["tool_calls: expected 1 call, got 2: calculator, calculator"]);
    expect(report("any order")[0]).toMatch(
      /^tool_calls \(expected #0, any order\): expected calculator with expression containing "pi \* 6", got closest, tool_calls\[0\]: arguments\.expression: expected containing "pi \* 6", got "round\(pi \* 5\^2, 2\)"$/,
    );
    expect(report("in order, not exact")).toEqual(["tool_calls (expected #0): expected terminate, got not found among: calculator, calculator"]);
    expect(report("plan steps")).toEqual(["plan.steps: expected 4, got 3"]);
    expect(report("plan status")).toEqual(["plan.status: expected completed, got no Plan Tool plan"]);
    expect(report("todos")).toEqual(["todos: expected a todo list, got the run wrote none"]);
    expect(report("model calls")).toEqual(["budget.max_model_calls: expected at most 2 model calls, got 3"]);
    expect(report("tokens")[0]).toMatch(/^budget\.max_tokens: expected at most 10 tokens, got \d{3,}$/);
    expect(report("tool calls budget")).toEqual(["budget.max_tool_calls: expected at most 1 tool calls, got 2"]);
    expect(r.stdout).toMatch(/✓ still passes \(\d+ ms\)/);
    expect(r.stdout).toMatch(/\n1 passed, 16 failed \(\d+ ms\)\n$/);
    expect(r.stdout).toContain(`${file}:4 answer contains`);
  }, 60_000);

  it("todo and Plan Tool state", async () => {
    const { file } = testFile(`version: 1
team: TEAMS/circle-plan.yaml
cases:
  - name: todos
    input: What are the area and circumference of a circle with radius 5 meters?
    recording: TEAMS/scripts/circle-plan.yaml
    expect: { todos: { count: 3, all: skipped, completed: 3 } }
`);
    const sop = testFile(`version: 1
team: TEAMS/safety-sop.yaml
cases:
  - name: sop tasks
    input: "Review: raise the boiler pressure limit from 8 to 10 bar"
    recording: TEAMS/scripts/safety-sop.yaml
    expect: { plan: { status: error, tasks: { t3: completed, t9: ready } } }
`);
    const r = await runCli(["test", file, sop.file]);
    expect(r.code).toBe(1);
    const items = "1:completed, 2:completed, 3:completed, 4:completed";
    expect(r.stdout).toContain(`      todos.count: expected 3, got 4\n`);
    expect(r.stdout).toContain(`      todos.all: expected every item skipped, got ${items}\n`);
    expect(r.stdout).toContain(`      todos.completed: expected 3 completed, got 4 (${items})\n`);
    expect(r.stdout).toContain("      plan.status: expected error, got completed\n");
    expect(r.stdout).toContain("      plan.tasks.t3: expected completed, got skipped\n");
    expect(r.stdout).toContain("      plan.tasks.t9: expected ready, got no such task\n");
    expect(r.stdout).toMatch(/\n0 passed, 2 failed \(\d+ ms\)\n$/);
  }, 60_000);

  it("an error expectation, and a case whose replies run out", async () => {
    const { file } = testFile(`version: 1
team: TEAMS/circle-react.yaml
cases:
  - name: replies run out
    input: Anything
    replies:
      - { agent: solver, content: '{"observe": "", "thought": "", "action": {"result": {"action_type": "CALL_TOOL", "output": {}}}}', tool_calls: [{ name: calculator, arguments: { expression: "1 +" } }] }
    expect:
      error: { contains: no reply left for agent solver }
      tool_calls: [calculator]
  - name: wrong error
    input: Anything
    replies: []
    expect: { error: { contains: max_iteration } }
`);
    const r = await runCli(["test", file]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/✓ replies run out \(\d+ ms\)/);
    expect(r.stdout).toMatch(/ {6}error: expected to contain "max_iteration", got "[^"]*no reply left for agent solver/);
  }, 30_000);
});

describe("an invalid test file", () => {
  it("every problem as FILE:LINE:COL /pointer message, exit 2, nothing run", async () => {
    const { file } = testFile(`version: 1
team: TEAMS/circle-react.yaml
cases:
  - name: typo
    input: x
    replies: []
    expct: { answer: { contains: x } }
  - name: both sources
    input: x
    replies: []
    recording: nowhere.yaml
  - name: wrong types
    input: x
    agent: nobody
    replies: []
    expect:
      result: done
      tool_calls: [{ name: calculator, arguments: { expression: { contain: pi } } }]
      budget: { max_tokens: many }
  - name: bad regex
    input: x
    replies: [{ match: "(" }]
`);
    const r = await runCli(["test", file]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    const lines = r.stderr.trim().split("\n");
    // The words of every YAML file's schema errors (src/config/validate.ts): names quoted, a near miss named.
    expect(lines).toContain(`${file}:7:5 /cases/0/expct unknown key 'expct' (did you mean 'expect'?)`);
    expect(lines).toContain(`${file}:8:5 /cases/1 expected exactly one of the keys 'replies' or 'recording'`);
    expect(lines).toContain(`${file}:17:15 /cases/2/expect/result expected one of 'answer', 'error', 'paused' or 'blocked', got 'done'`);
    expect(lines).toContain(`${file}:18:67 /cases/2/expect/tool_calls/0/arguments/expression/contain unknown key 'contain' (did you mean 'contains'?)`);
    expect(lines).toContain(`${file}:19:29 /cases/2/expect/budget/max_tokens expected an integer, got 'many'`);
  });

  it("after the schema: a bad regex, an unknown agent, a missing recording", async () => {
    const { file } = testFile(`version: 1
team: TEAMS/circle-react.yaml
cases:
  - name: bad regex
    input: x
    agent: nobody
    replies: [{ match: "(" }]
  - name: missing recording
    input: x
    recording: ./nowhere.yaml
`);
    const r = await runCli(["test", file]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split("\n");
    // Every problem at once, in the order of the file.
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe(`${file}:6:12 /cases/0/agent unknown agent 'nobody' (agents: solver)`);
    expect(lines[1]).toMatch(new RegExp(`^${file}:7:24 /cases/0/replies/0/match invalid regex: `));
    expect(lines[2]).toMatch(new RegExp(`^${file}:10:16 /cases/1/recording recording ${join(file, "..", "nowhere.yaml")} not found`));
  });

  it("hostile YAML is refused by the loader's limits; a missing path is a usage error", async () => {
    const bomb = testFile(`version: 1\nteam: &a [x, x]\ncases: ${"*a ".repeat(1).trim()}\n__proto__: 1\n`);
    const r = await runCli(["test", bomb.file]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(`${bomb.file}:4:1 /__proto__ key '__proto__' is not allowed`);
    const none = await runCli(["test", join(bomb.dir, "missing")]);
    expect(none.code).toBe(2);
    expect(none.stderr).toContain("missing: no such file or directory");
  });
});

describe("--junit", () => {
  it("writes JUnit XML with the right counts, hostile text escaped", async () => {
    const hostile = `<img src=x onerror=alert(1)> & "quotes" ]]>`;
    const { dir, file } = testFile(`version: 1
team: TEAMS/circle-react.yaml
cases:
  - name: passes${CIRCLE}
    expect: { answer: { contains: "78.54" } }
  - name: ${JSON.stringify(hostile)}${CIRCLE}
    expect: { answer: { contains: ${JSON.stringify(hostile)} } }
  - name: passes too${CIRCLE}
    expect: { tool_calls: [calculator, calculator] }
`);
    const out = join(dir, "report.xml");
    const r = await runCli(["test", file, "--junit", out]);
    expect(r.code).toBe(1);
    const xml = readFileSync(out, "utf8");
    expect(XMLValidator.validate(xml)).toBe(true);
    expect(xml).not.toContain("<img");
    const doc = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: "" }).parse(xml) as {
      testsuites: {
        tests: string;
        failures: string;
        testsuite: { tests: string; failures: string; testcase: Array<{ name: string; failure?: { message: string; "#text": string } }> };
      };
    };
    expect(doc.testsuites.tests).toBe("3");
    expect(doc.testsuites.failures).toBe("1");
    const suite = doc.testsuites.testsuite;
    expect([suite.tests, suite.failures]).toEqual(["3", "1"]);
    const failed = suite.testcase.filter((c) => c.failure);
    expect(failed.map((c) => c.name)).toEqual([hostile]);
    expect(failed[0]!.failure!.message).toContain(`answer: expected to contain ${JSON.stringify(hostile)}`);
  }, 30_000);

  it("a --junit path in a missing folder is a usage error before anything runs", async () => {
    const { dir, file } = testFile(`version: 1\nteam: TEAMS/circle-react.yaml\ncases:\n  - name: a${CIRCLE}\n`);
    const r = await runCli(["test", file, "--junit", join(dir, "no/such/dir/r.xml")]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
  });
});
