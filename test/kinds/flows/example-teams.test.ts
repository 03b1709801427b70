import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { loadTeam } from "../../../src/config/load.js";
import { ofType, runAll, traceDir } from "../../support/flows.js";

const teamFile = (name: string) => fileURLToPath(new URL(`../../../teams/${name}`, import.meta.url));

describe("example flow teams, offline on the scripted model", () => {
  it("research-flow: plans, executes, replans, answers with the calculator's figures", async () => {
    const team = await loadTeam(teamFile("research-flow.yaml"));
    const { result, events } = await runAll(team, {
      input: "What are the area and circumference of a circle with radius 5 meters?",
      traceDir: traceDir(),
    });

    expect(result).toMatchObject({ result_type: "answer" });
    const figures = ofType(events, "tool.finished").map((e) => (e.result as { result: number }).result);
    expect(figures).toEqual([78.54, 31.42]);
    for (const figure of figures) expect(result.answer).toContain(String(figure));
    const flow = ofType(events, "state.changed").filter((e) => e.machine === "plan_and_solve_flow");
    expect(flow.map((e) => e.to)).toEqual(["PLAN", "EXECUTE", "REPLAN", "EXECUTE", "REPLAN", "DONE"]);
    expect(ofType(events, "plan.created")[0]?.steps).toHaveLength(3);
    expect(ofType(events, "plan.updated").at(-1)).toMatchObject({ finished: 2 });
  });

  it("plan-solver: four solvers in parallel, aggregated with the calculator's figures", async () => {
    const team = await loadTeam(teamFile("plan-solver.yaml"));
    const { result, events } = await runAll(team, {
      input: "For a circle of radius 5 m, give its diameter, circumference and area, and the volume of a sphere of the same radius.",
      traceDir: traceDir(),
    });

    expect(result.result_type).toBe("answer");
    const figures = ofType(events, "tool.finished").map((e) => (e.result as { result: number }).result);
    expect([...figures].sort((a, b) => a - b)).toEqual([10, 31.42, 78.54, 523.6]);
    for (const figure of figures) expect(result.answer).toContain(String(figure));

    // All four solvers start before the first one finishes: they overlap.
    const solverEvents = events.filter((e) => e.agent_id === "solver" && (e.type === "agent.started" || e.type === "agent.finished"));
    expect(solverEvents.slice(0, 4).every((e) => e.type === "agent.started")).toBe(true);
    const aggregatorStart = events.findIndex((e) => e.type === "agent.started" && e.agent_id === "aggregator");
    const lastSolverEnd = events.findLastIndex((e) => e.type === "agent.finished" && e.agent_id === "solver");
    expect(aggregatorStart).toBeGreaterThan(lastSolverEnd);
  });
});
