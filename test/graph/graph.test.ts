import { describe, expect, it } from "vitest";
import { createMachine } from "xstate";
import { machineToMermaid } from "../../src/graph/mermaid.js";
import { runCli } from "../support/cli.js";

describe("runtime graph", () => {
  it("draws the react machine with the state names of docs/design/react-design.md", async () => {
    const r = await runCli(["graph", "--machine", "react"]);
    expect(r.code).toBe(0);
    expect(r.stdout.startsWith("stateDiagram-v2\n")).toBe(true);
    for (const line of [
      "[*] --> INIT",
      "INIT --> RECURSION",
      "state RECURSION {",
      "INPUT --> REACH_MAX_ITERATION",
      "state REACH_MAX_ITERATION <<choice>>",
      "REACH_MAX_ITERATION --> CALL_LLM",
      "state CALL_LLM {",
      "OBSERVE --> THOUGHT : done",
      "THOUGHT --> ACTION_TYPE",
      "ACTION_TYPE --> CALL_TOOL : [isCallTool]",
      "ACTION_TYPE --> RE_PLAN : [isPlan]",
      "ACTION_TYPE --> ANSWER : [isAnswer]",
      "RECURSION --> RESULT_TYPE",
      "state RESULT_TYPE <<choice>>",
      "RESULT_TYPE --> [*] : [isFinished]",
      "RESULT_TYPE --> RECURSION",
    ]) {
      expect(r.stdout).toContain(line);
    }
  });

  it("draws every named machine and refuses an unknown one", async () => {
    for (const [name, state] of [
      ["plan_and_solve", "VERIFYING"],
      ["task", "IN_PROGRESS --> COMPLETED"],
      ["plan_tool", "error --> inprogress"],
    ] as const) {
      const r = await runCli(["graph", "--machine", name]);
      expect(r.code, name).toBe(0);
      expect(r.stdout).toContain(state);
    }
    const bad = await runCli(["graph", "--machine", "nope"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("unknown machine 'nope'");
  });

  it("is generated from the definition: a machine change shows in the drawing", () => {
    const machine = createMachine({
      id: "m",
      initial: "A",
      states: {
        A: { on: { GO: "B" } },
        B: { initial: "B1", states: { B1: { on: { END: "DONE" } }, DONE: { type: "final" } }, onDone: "C" },
        C: { type: "final" },
      },
    });
    expect(machineToMermaid(machine)).toBe(
      ["stateDiagram-v2", "  [*] --> A", "  state B {", "    [*] --> B1", "    B1 --> [*] : END", "  }", "  A --> B : GO", "  B --> C", "  C --> [*]", ""].join(
        "\n",
      ),
    );
  });

  it("draws an edge between states of different composites between the composites", () => {
    const machine = createMachine({
      id: "m",
      initial: "P",
      states: {
        P: { initial: "P1", states: { P1: { on: { JUMP: "#m.S.S2" } } } },
        S: { initial: "S1", states: { S1: {}, S2: {} } },
      },
    });
    const out = machineToMermaid(machine);
    expect(out).toContain("  P --> S : JUMP\n");
    expect(out).not.toContain("P1 --> S2");
  });

  it("draws a flow's composition from a team file", async () => {
    const r = await runCli(["graph", "teams/plan-solver.yaml"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--> \w+ : plan/);
    expect(r.stdout).toMatch(/each task \(≤\d+ at once\)/);
  });
});
