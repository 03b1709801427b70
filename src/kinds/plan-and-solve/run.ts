import type { PlanAndSolveAgentConfig } from "../../config/types.js";
import type { RunEventBody, Verification } from "../../events/types.js";
import { compileTemplate, defaultTemplate } from "../../prompts/render.js";
import type { AgentRunner } from "../types.js";
import { fromPromise } from "../machine/kit.js";
import { askModel, execute, finish, refuseUnplanned, startWork, summarize, verify, type Work } from "./work.js";
import { pending, planAndSolveMachine } from "./machine.js";
import type { PlanAndSolveContext, Step, Verdict } from "./types.js";
import { userMessage } from "../conversation.js";
import { reviewCoverage } from "./verifier.js";
import { missingParts } from "./answer-checks.js";
import { Memory } from "./memory.js";
import { TodoLoopContext } from "./todo-context.js";
import { TODO_TOOL_NAMES, todoTools } from "./todo-tools.js";
import { type ImplementationsOf, runMachine } from "../run-machine.js";
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

  // Todo events and states belong to the round that caused them.
  const round = { trace_id: "", iteration: 0 };
  const emit = (body: RunEventBody) => ctx.emit(body, round.trace_id ? { trace_id: round.trace_id } : undefined);

  // The conversation's list belongs to the agent the user talks to. An agent
  // called by another (a flow's executor, a solver, an agent used as a tool)
  // works one request: its list is its own, keyed by its step and not stored,
  // so parallel or successive calls never share or overwrite a list.
  const child = ctx.scope.parent_step_id !== undefined;
  const session_id = child ? `${ctx.session_id}:${ctx.scope.step_id}` : ctx.session_id;
  const store = child ? undefined : ctx.stores.todoSessions();
  try {
    const thresholds = { complete_after: agent.todo_complete_after, block_after: agent.todo_block_after };
    // The session's list as this run found it, so a resumed run starts from the same list.
    const initial = store ? await ctx.remember("todo_session", async () => (await store.load(session_id)) ?? null) : null;
    const todos = new TodoLoopContext({
      session_id,
      emit,
      ...(store ? { store, initial: initial ?? { version: 0, items: [] }, replaying: () => ctx.replaying() } : {}),
      now: () => ctx.now(),
      ...thresholds,
      work_tools: agent.tools.filter((t) => t !== "terminate" && !TODO_TOOL_NAMES.has(t)),
    });
    const work = startWork({
      ctx,
      input,
      template,
      todos,
      // In a named session, the request comes after the conversation so far (docs/sessions.md); the run's files with it (docs/attachments.md).
      memory: new Memory(await userMessage(ctx, input)),
      toolbox: ctx.tools(todoTools(todos, toolNames(ctx.team, agent), (items) => coverage(ctx, input, items))),
      thresholds,
      round,
    });
    return await runMachine(
      ctx,
      planAndSolveMachine,
      bindPlanAndSolve(work),
      { max_iteration: agent.max_iteration },
      {
        start: { type: "RUN" },
        traceId: () => round.trace_id || undefined,
      },
    );
  } finally {
    await store?.close();
  }
};

/** The machine's implementations for this step: its actors over the step's work (work.ts), and the guards that read its todo list. */
function bindPlanAndSolve(work: Work) {
  const { memory, todos } = work;
  return {
    actors: {
      /** AnalyzeProblem, CheckNextTask, CheckResults: ask the model; in AnalyzeProblem, first refuse a work tool called before any plan. */
      callModel: fromPromise<Step, { context: PlanAndSolveContext }>(async ({ input: { context } }) => {
        if (context.unplanned && context.current) {
          const outcome = refuseUnplanned(work, context.current);
          memory.addOutcome(outcome);
          return { kind: "outcome", outcome };
        }
        return { kind: "reply", reply: await askModel(work, context.iteration + 1) };
      }),
      /** CreatePlan, ValidatePlan: run the todo tool and answer it at once. */
      runTodoTool: fromPromise<Step, { context: PlanAndSolveContext }>(async ({ input: { context } }) => {
        const outcome = await execute(work, context.current!);
        memory.addOutcome(outcome);
        return { kind: "outcome", outcome };
      }),
      /** PLANNING.StorePlan: persist the session's list. */
      storePlan: fromPromise<void, { context: PlanAndSolveContext }>(async () => todos.persist()),
      /** SOLVING.MarkInProgress: the active item, or the next pending one, is in progress. */
      markInProgress: fromPromise<void, { context: PlanAndSolveContext }>(async () => void todos.begin()),
      executeTool: fromPromise<Step, { context: PlanAndSolveContext }>(async ({ input: { context } }) => ({
        kind: "outcome",
        outcome: await execute(work, context.current!),
      })),
      recordResult: fromPromise<void, { context: PlanAndSolveContext }>(async ({ input: { context } }) => memory.addOutcome(context.outcome!)),
      /** SOLVING.MarkCompleted: the heuristics after a work tool (3 successes, 2 failures). */
      markCompleted: fromPromise<void, { context: PlanAndSolveContext }>(async ({ input: { context } }) => {
        if (context.current?.name !== "update_todo_item") void todos.track(context.outcome!.ok, context.outcome!.tool);
      }),
      validateAnswer: fromPromise<Verdict, { context: PlanAndSolveContext }>(({ input: { context } }) =>
        verify(work, {
          ...(context.current ? { call: context.current } : { text: context.text ?? "" }),
          may_refuse: !context.refused && context.iteration < context.max_iteration,
          can_retry: context.iteration < context.max_iteration,
        }),
      ),
      formatResponse: fromPromise<{ answer?: string; verification?: Verification }, { context: PlanAndSolveContext }>(async ({ input: { context } }) => {
        finish(work, true);
        if (context.answer) return { answer: context.answer, ...(work.verification ? { verification: work.verification } : {}) };
        const summary = await summarize(work, "no_answer");
        return summary.text ? { answer: summary.text } : {};
      }),
      finalSummary: fromPromise<{ text?: string }, { context: PlanAndSolveContext }>(async () => {
        finish(work, false);
        return summarize(work, "max_iteration");
      }),
    },
    guards: {
      doneAtLimit: ({ context }: { context: PlanAndSolveContext }) => context.iteration >= context.max_iteration && todos.allTerminal(),
      needsPlan: ({ context }: { context: PlanAndSolveContext }) => context.plan_invalid || todos.isEmpty(),
      callsUnplanned: ({ context, event }: { context: PlanAndSolveContext; event: unknown }) => {
        const head = pending(context, event)[0];
        return head !== undefined && work.planRequired && todos.isEmpty() && head.name !== "terminate" && !TODO_TOOL_NAMES.has(head.name);
      },
      allDone: () => todos.allTerminal(),
    },
  } satisfies ImplementationsOf<typeof planAndSolveMachine>;
}

/**
 * validate_plan's coverage review (docs/plan-and-solve.md#planning-comes-first-and-is-reviewed):
 * unless `verify: off`, the parts the request lists that no item mentions;
 * with `verify: model` and no such gap, the model's judgement as well.
 */
async function coverage(ctx: Parameters<typeof runPlanAndSolve>[0], request: string, items: readonly { index: number; content: string }[]): Promise<string[]> {
  if (ctx.agent.verify === "off") return [];
  const gaps = missingParts(request, items.map((i) => i.content).join("\n"));
  if (gaps.length > 0) return gaps.map((p) => `Coverage: the request asks for the ${p}, which no item mentions`);
  return ctx.agent.verify === "model" || ctx.agent.verify === "strict" ? reviewCoverage(ctx, request, items) : [];
}

/** The agent's tools, and the team's others (declared tools, built-ins) it cannot call: what validate_plan checks a plan against. */
function toolNames(team: ResolvedTeam, agent: AgentConfig): ToolNames {
  const available = new Set(agent.tools);
  // Agents are left out: their names are often plain words ("review", "research").
  const all = [...Object.keys(team.tools), ...BUILTIN_TOOL_NAMES];
  return { available: [...available], unavailable: [...new Set(all)].filter((n) => !available.has(n) && n !== agent.name) };
}
