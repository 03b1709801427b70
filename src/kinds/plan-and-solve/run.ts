import type { PlanAndSolveAgentConfig } from "../../config/types.js";
import type { RunEventBody } from "../../events/types.js";
import { compileTemplate, defaultTemplate } from "../../prompts/render.js";
import type { AgentRunner } from "../types.js";
import { planAndSolveImplementations } from "./actors.js";
import { createEffects } from "./effects.js";
import { planAndSolveMachine } from "./machine.js";
import { userMessage } from "../conversation.js";
import { reviewCoverage } from "./verifier.js";
import { missingParts } from "./answer-checks.js";
import { Memory } from "./memory.js";
import { TodoLoopContext } from "./todo-context.js";
import { TODO_TOOL_NAMES, todoTools } from "./todo-tools.js";
import { runMachine } from "../run-machine.js";
import { BUILTIN_TOOL_NAMES } from "../../config/tool-names.js";
import type { AgentConfig, ResolvedTeam } from "../../config/types.js";
import type { ToolNames } from "./todo-tools.js";

/**
 * Run a `plan_and_solve` agent (docs/design/plan-and-solve-design.md, docs/design/todo-list-design.md): plan with a todo list,
 * work it item by item, verify, terminate. The list lives in the session
 * (`<trace_dir>/sessions.db`), so a follow-up run in the same session
 * continues it; an agent called by another agent has a list of its own. Each request is `[system, user, assistant, tool, ...]` with
 * the system prompt, todo list included, rendered afresh every round.
 */
export const runPlanAndSolve: AgentRunner<PlanAndSolveAgentConfig> = async (ctx, input) => {
  const agent = ctx.agent;
  const template = agent.prompt !== undefined ? compileTemplate(agent.prompt) : defaultTemplate("plan_and_solve");

  // Todo events belong to the round that caused them.
  let trace_id: string | undefined;
  const emit = (body: RunEventBody) => ctx.emit(body, trace_id ? { trace_id } : undefined);

  // The conversation's list belongs to the agent the user talks to. An agent
  // called by another (a flow's executor, a solver, an agent used as a tool)
  // works one request: its list is its own, keyed by its step and not stored,
  // so parallel or successive calls never share or overwrite a list.
  const child = ctx.scope.parent_step_id !== undefined;
  const session_id = child ? `${ctx.session_id}:${ctx.scope.step_id}` : ctx.session_id;
  const store = child ? undefined : ctx.stores.todoSessions();
  try {
    const limits = { complete_after: agent.todo_complete_after, block_after: agent.todo_block_after };
    // The session's list as this run found it, so a resumed run starts from the same list.
    const initial = store ? await ctx.remember("todo_session", async () => (await store.load(session_id)) ?? null) : null;
    const todos = new TodoLoopContext({
      session_id,
      emit,
      ...(store ? { store, initial: initial ?? { version: 0, items: [] }, replaying: () => ctx.replaying() } : {}),
      now: () => ctx.now(),
      ...limits,
      work_tools: agent.tools.filter((t) => t !== "terminate" && !TODO_TOOL_NAMES.has(t)),
    });
    const effects = createEffects({
      ctx,
      input,
      template,
      todos,
      // In a named session, the request comes after the conversation so far (docs/sessions.md); the run's files with it (docs/attachments.md).
      memory: new Memory(await userMessage(ctx, input)),
      toolbox: ctx.tools(todoTools(todos, toolNames(ctx.team, agent), (items) => coverage(ctx, input, items))),
      thresholds: limits,
      round: (id) => {
        trace_id = id;
      },
    });
    // Todo events and states belong to the round that caused them.
    return await runMachine(
      ctx,
      planAndSolveMachine,
      planAndSolveImplementations(effects),
      { max_iteration: agent.max_iteration },
      {
        start: { type: "RUN" },
        traceId: () => trace_id,
      },
    );
  } finally {
    await store?.close();
  }
};

/**
 * validate_plan's coverage review (docs/plan-and-solve.md#planning-comes-first-and-is-reviewed):
 * unless `verify: off`, the parts the request lists that no item mentions;
 * with `verify: model` and no such gap, the model's judgement as well.
 */
async function coverage(ctx: Parameters<typeof runPlanAndSolve>[0], request: string, items: readonly { index: number; content: string }[]): Promise<string[]> {
  if (ctx.agent.verify === "off") return [];
  const gaps = missingParts(request, items.map((i) => i.content).join("\n"));
  if (gaps.length > 0) return gaps.map((p) => `Coverage: the request asks for the ${p}, which no item mentions`);
  return ctx.agent.verify === "model" ? reviewCoverage(ctx, request, items) : [];
}

/** The agent's tools, and the team's others (declared tools, built-ins) it cannot call: what validate_plan checks a plan against. */
function toolNames(team: ResolvedTeam, agent: AgentConfig): ToolNames {
  const available = new Set(agent.tools);
  // Agents are left out: their names are often plain words ("review", "research").
  const all = [...Object.keys(team.tools), ...BUILTIN_TOOL_NAMES];
  return { available: [...available], unavailable: [...new Set(all)].filter((n) => !available.has(n) && n !== agent.name) };
}
