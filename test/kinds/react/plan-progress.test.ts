/**
 * The chat stream says which plan steps are done (docs/design/react-design.md): a react model
 * that plans again marks the steps it finished with [x], in any order;
 * `plan.updated.done` lists them and `finished` counts them.
 */
import { afterEach, expect, it } from "vitest";
import { loadTeam } from "../../../src/config/load.js";
import { runTeam } from "../../../src/engine/run-team.js";
import { planProgress } from "../../../src/kinds/react/run.js";
import { startOpenAIServer, type OpenAIServer, type Reply } from "../../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../../support/team.js";

const servers: OpenAIServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

it("reports the steps the model marks done, in any order and by identity; the answer finishes no other", async () => {
  const replies: Reply[] = [
    { content: reactReply("PLAN", { plan: "1. Compute the area.\n2. Compute the circumference.\n3. Check the units." }) },
    { content: null, tool_calls: [{ name: "calculator", arguments: { expression: "round(2 * pi * 5, 2)" } }] },
    // The second step first: done out of order.
    { content: reactReply("PLAN", { plan: "1. Compute the area.\n2. [x] Compute the circumference.\n3. Check the units." }) },
    { content: null, tool_calls: [{ name: "calculator", arguments: { expression: "round(pi * 25, 2)" } }] },
    // Reordered, and the circumference's mark dropped: it stays done, by its text.
    { content: reactReply("PLAN", { plan: "1. Compute the circumference.\n2. [x] Compute the area.\n3. Check the units." }) },
    { content: reactReply("ANSWER", { answer: "78.54 m² and 31.42 m" }) },
  ];
  const server = await startOpenAIServer({ replies });
  servers.push(server);
  const file = writeTeam(`version: 1
name: progress
models:
  default: { provider: openai, model: m, base_url: "${server.url}", api_key: sk-progress-0123456789, max_retries: 0 }
agents:
  solver: { kind: react, tools: [calculator] }
`);
  const run = runTeam(await loadTeam(file), { input: "circle of radius 5", traceDir: tempDir() });
  const plans = [];
  for await (const e of run.events) if (e.type === "plan.created" || e.type === "plan.updated") plans.push(e);
  expect((await run.result).answer).toBe("78.54 m² and 31.42 m");
  const first = ["Compute the area.", "Compute the circumference.", "Check the units."];
  const reordered = ["Compute the circumference.", "Compute the area.", "Check the units."];
  expect(plans.map((p) => [p.type, p.steps, p.type === "plan.updated" ? p.finished : undefined, p.type === "plan.updated" ? p.done : undefined])).toEqual([
    ["plan.created", first, undefined, undefined],
    ["plan.updated", first, 1, [2]],
    ["plan.updated", reordered, 2, [1, 2]],
  ]);
});

it("reads done marks on any step, in the forms models write them", () => {
  expect(planProgress("1. [x] a\n2. ✓ b\n3. c")).toEqual({ steps: ["a", "b", "c"], marked: [1, 2] });
  expect(planProgress("1. [done] a\n2. b\n3. [x] c")).toEqual({ steps: ["a", "b", "c"], marked: [1, 3] });
  expect(planProgress("- (done) a\n- [X] b")).toEqual({ steps: ["a", "b"], marked: [1, 2] });
  expect(planProgress("1. a\n2. b")).toEqual({ steps: ["a", "b"], marked: [] });
});
