import { describe, expect, it } from "vitest";
import { planAndSolveMachine } from "../../../src/kinds/plan-and-solve/machine.js";
import { Memory, toolContent } from "../../../src/kinds/plan-and-solve/memory.js";
import { taskMachine } from "../../../src/kinds/plan-and-solve/task-machine.js";
import { machineToMermaid } from "../../../src/index.js";

const usage = { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 };

describe("Memory", () => {
  it("keeps the layout [system, user, assistant, tool...] and answers calls left open", () => {
    const memory = new Memory("question");
    memory.addAssistant({
      content: null,
      tool_calls: [
        { id: "a", name: "terminate", arguments: "{}" },
        { id: "b", name: "calculator", arguments: "{}" },
      ],
      usage,
      finish_reason: "tool_calls",
    });
    memory.addOutcome({ call_id: "a", tool: "terminate", arguments: {}, ok: true, result: { answer: "x" }, duration_ms: 1 });
    expect(memory.unanswered().map((c) => c.id)).toEqual(["b"]);
    memory.closeUnanswered("the run ended with terminate");
    expect(memory.unanswered()).toEqual([]);
    const request = memory.request("SYSTEM");
    expect(request.map((m) => m.role)).toEqual(["system", "user", "assistant", "tool", "tool"]);
    expect(request[4]).toEqual({ role: "tool", tool_call_id: "b", content: "Error: not run: the run ended with terminate" });
  });

  it("writes results as JSON and failures as errors", () => {
    const base = { call_id: "c", tool: "t", arguments: {}, duration_ms: 0 };
    expect(toolContent({ ...base, ok: true, result: { result: 2 } })).toBe('{"result":2}');
    expect(toolContent({ ...base, ok: true, result: "plain" })).toBe("plain");
    expect(toolContent({ ...base, ok: false, error: "boom" })).toBe("Error: boom");
  });
});

describe("machines as Mermaid", () => {
  it("draws the lifecycle with the state names of docs/design/plan-and-solve-design.md diagram 1", () => {
    const text = machineToMermaid(planAndSolveMachine, "plan_and_solve");
    for (const name of [
      "IDLE",
      "PLANNING",
      "AnalyzeProblem",
      "CreatePlan",
      "ValidatePlan",
      "StorePlan",
      "SOLVING",
      "CheckNextTask",
      "MarkInProgress",
      "ExecuteTool",
      "RecordResult",
      "MarkCompleted",
      "VERIFYING",
      "CheckResults",
      "ValidateAnswer",
      "FormatResponse",
      "FINISHED",
    ]) {
      expect(text).toContain(name);
    }
  });

  it("draws the task machine of docs/design/plan-and-solve-design.md diagram 2 with BLOCKED", () => {
    const text = machineToMermaid(taskMachine, "task");
    expect(text).toContain("PENDING --> IN_PROGRESS");
    expect(text).toContain("FAILED --> IN_PROGRESS");
    expect(text).toContain("BLOCKED --> IN_PROGRESS");
  });
});
