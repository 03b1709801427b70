import { afterEach, describe, expect, it } from "vitest";
import { loadTeam } from "../../src/config/load.js";
import type { RunEvent } from "../../src/events/types.js";
import { runTeam } from "../../src/engine/run-team.js";
import { closePlanTool, openPlanTool } from "../../src/store/sqlite/store.js";
import { startOpenAIServer, type ChatBody, type OpenAIServer, type Reply } from "../support/openai-server.js";
import { reactReply, tempDir, writeTeam } from "../support/team.js";

const dirs: string[] = [];
const servers: OpenAIServer[] = [];
afterEach(async () => {
  while (servers.length) await servers.pop()?.close();
  while (dirs.length) closePlanTool(dirs.pop() as string);
});

function team(url: string, order = "steps"): string {
  return writeTeam(`version: 1
name: sop-rules
entry: review
models:
  default: { provider: openai, model: test-model, base_url: "${url}", api_key: sk-test-rules, timeout_ms: 5000, max_retries: 0 }
agents:
  review: { kind: sop, workflow: W, strategist: strategist }
  strategist:
    kind: react
    max_iteration: 20
    tools: [get_plan_structure, update_task_status, analyst, reviewer]
  analyst: { kind: react, description: Analyses. }
  reviewer: { kind: react, description: Reviews. }
workflows:
  W:
    name: Review
    order: ${order}
    steps:
      - step_id: s1
        name: Analyse
        tasks:
          - { task_id: t1, name: Gather, assignee: analyst, description: Gather the facts. }
          - { task_id: t2, name: Check, assignee: reviewer, description: Check the facts. }
      - step_id: s2
        name: Decide
        tasks:
          - { task_id: t3, name: Verdict, assignee: reviewer, description: Write the verdict. }
`);
}

const call = (name: string, args: Record<string, unknown>): Reply => ({
  content: reactReply("CALL_TOOL", {}),
  tool_calls: [{ id: `c_${name}_${Math.random().toString(36).slice(2, 8)}`, name, arguments: args }],
});
const answer = (text: string): Reply => ({ content: reactReply("ANSWER", { answer: text }) });
const status = (task_id: string, s: string, result_summary?: string) =>
  call("update_task_status", { task_id, status: s, ...(result_summary ? { result_summary } : {}) });

/** The one tool result the runtime reported back in the last assistant message. */
function lastResult(body: ChatBody): { ok: boolean; result?: unknown; error?: string } {
  const last = body.messages?.at(-1);
  if (last?.role !== "assistant") return { ok: false, error: "no result" };
  return (JSON.parse(String(last.content)) as { tool_results: Array<{ ok: boolean; result?: unknown; error?: string }> }).tool_results[0]!;
}

/** A server answering each agent by its own script (react prompts start "You are NAME"); the strategist's script sees each result. */
async function serve(strategist: Array<(body: ChatBody) => Reply>, seen: Array<{ ok: boolean; result?: unknown; error?: string }>): Promise<OpenAIServer> {
  let n = 0;
  const server = await startOpenAIServer({
    respond(body) {
      const system = String(body.messages?.find((m) => m.role === "system")?.content ?? "");
      const agent = /^You are (\w+)/.exec(system)?.[1] ?? "?";
      if (agent === "analyst") return answer("facts: the valve is rated for 12 bar");
      if (agent === "reviewer") return answer("checked: accepted");
      if (n > 0) seen.push(lastResult(body));
      const step = strategist[n++];
      return step ? step(body) : answer("done");
    },
  });
  servers.push(server);
  return server;
}

async function run(file: string) {
  const dir = tempDir("sop-rules-");
  dirs.push(dir);
  const events: RunEvent[] = [];
  const result = await runTeam(await loadTeam(file), { input: "Review the change", traceDir: dir, sinks: [(e) => events.push(e)] }).result;
  const [summary] = await openPlanTool(dir).list_plans();
  const plan = await openPlanTool(dir).get_plan_structure(summary!.plan_id);
  return { result, events, plan };
}

describe("the sop kind enforces the workflow on a careless strategist", () => {
  it("refuses the wrong role, a completion without the assignee and a step started early; the plan still completes", async () => {
    const seen: Array<{ ok: boolean; result?: unknown; error?: string }> = [];
    const server = await serve(
      [
        () => status("t1", "inprogress"),
        () => call("reviewer", { query: "Gather the facts (t1)" }), // wrong role: t1 is the analyst's
        () => status("t1", "completed", "made up"), // nobody worked on it
        () => status("t3", "inprogress"), // step s2 while s1 is open
        () => call("analyst", { query: "Gather the facts (t1)" }),
        () => status("t1", "completed", "valve rated for 12 bar"),
        () => status("t2", "inprogress"),
        () => call("analyst", { query: "Check the facts (t2)" }), // wrong role again, with a task in progress
        () => status("t2", "completed", "made up"), // the analyst's answer does not complete the reviewer's task
        () => call("reviewer", { query: "Check the facts (t2)" }),
        () => status("t2", "completed", "accepted"),
        () => status("t3", "inprogress"),
        () => call("reviewer", { query: "Write the verdict (t3)" }),
        () => status("t3", "completed", "approved"),
      ],
      seen,
    );
    const { result, events, plan } = await run(team(server.url));

    expect(result.result_type, result.error?.message).toBe("answer");
    expect(plan?.status).toBe("completed");
    expect(plan?.steps.flatMap((s) => s.tasks.map((t) => `${t.task_id}:${t.status}:${t.result_summary}`))).toEqual([
      "t1:completed:valve rated for 12 bar",
      "t2:completed:accepted",
      "t3:completed:approved",
    ]);

    const refusals = seen.filter((r) => !r.ok).map((r) => r.error);
    expect(refusals).toEqual([
      "refused: reviewer has no task in progress (in progress: t1 → analyst): mark its task (t2, t3) inprogress first, or ask the assignee of the task you are working on.",
      'refused: task t1 "Gather" is assigned to analyst, who has not worked on it since it went inprogress. Ask analyst to do it, then mark it completed with what it answered.',
      'refused: task t3 belongs to step s2 "Decide", and the earlier steps are not settled: t1 of step s1 (inprogress), t2 of step s1 (ready). Complete, skip or fail those first (the workflow\'s steps run in order).',
      "refused: analyst has no task in progress (in progress: t2 → reviewer): it has no open task; ask the assignee of the task you are working on.",
      'refused: task t2 "Check" is assigned to reviewer, who has not worked on it since it went inprogress. Ask reviewer to do it, then mark it completed with what it answered.',
    ]);
    // Each refusal is the tool call's error, in the trace too; a refused agent call never started the agent.
    const failed = events.filter((e): e is Extract<RunEvent, { type: "tool.finished" }> => e.type === "tool.finished" && !e.ok);
    expect(failed.map((e) => e.tool)).toEqual(["reviewer", "update_task_status", "update_task_status", "analyst", "update_task_status"]);
    const started = events.filter((e) => e.type === "agent.started").map((e) => e.agent_id);
    expect(started).toEqual(["review", "strategist", "analyst", "reviewer", "reviewer"]);
    // No refused change reached the plan.
    const changes = events.filter((e): e is Extract<RunEvent, { type: "task.status" }> => e.type === "task.status" && e.status !== "ready");
    expect(changes.map((e) => `${e.plan_task_id}:${e.status}`)).toEqual([
      "t1:inprogress",
      "t1:completed",
      "t2:inprogress",
      "t2:completed",
      "t3:inprogress",
      "t3:completed",
    ]);
  });

  it("order: free lets a later step's task start at once; completion still needs the assignee", async () => {
    const seen: Array<{ ok: boolean; result?: unknown; error?: string }> = [];
    const server = await serve(
      [
        () => status("t3", "inprogress"),
        () => status("t3", "completed", "made up"),
        () => call("reviewer", { query: "Write the verdict (t3)" }),
        () => status("t3", "completed", "approved"),
        () => status("t1", "skipped", "not needed"),
        () => status("t2", "skipped", "not needed"),
      ],
      seen,
    );
    const { result, plan } = await run(team(server.url, "free"));
    expect(result.result_type, result.error?.message).toBe("answer");
    expect(plan?.status).toBe("completed");
    expect(seen.map((r) => r.ok)).toEqual([true, false, true, true, true, true]);
    expect(seen[1]?.error).toMatch(/^refused: task t3 "Verdict" is assigned to reviewer/);
  });

  it("ties an assignee's answer to the task the query names: an answer about t2 does not complete t3", async () => {
    const seen: Array<{ ok: boolean; result?: unknown; error?: string }> = [];
    const server = await serve(
      [
        () => status("t2", "inprogress"),
        () => status("t3", "inprogress"),
        () => call("reviewer", { query: "Please look at everything" }), // two tasks in progress, neither named
        () => call("reviewer", { query: "t2: check the facts" }),
        () => status("t3", "completed", "hazards (never asked)"),
        () => status("t2", "completed", "accepted"),
        () => call("reviewer", { query: "Write the verdict" }), // its one task in progress now
        () => status("t3", "completed", "approved"),
        () => status("t1", "skipped", "not needed"),
      ],
      seen,
    );
    const { result, plan } = await run(team(server.url, "free"));
    expect(result.result_type, result.error?.message).toBe("answer");
    expect(seen.map((r) => r.ok)).toEqual([true, true, false, true, false, true, true, true, true]);
    expect(seen[2]?.error).toBe(
      'refused: reviewer has 2 tasks in progress (t2 "Check", t3 "Verdict"): name the task the query is about (its task_id, e.g. "t2: ..."), one task per call.',
    );
    expect(seen[4]?.error).toBe(
      'refused: task t3 "Verdict" is assigned to reviewer, who has not worked on it since it went inprogress (its answers since were about t2). Ask reviewer to do it, then mark it completed with what it answered.',
    );
    expect(plan?.steps.flatMap((s) => s.tasks.map((t) => `${t.task_id}:${t.status}:${t.result_summary}`))).toEqual([
      "t1:skipped:not needed",
      "t2:completed:accepted",
      "t3:completed:approved",
    ]);
  });
});
